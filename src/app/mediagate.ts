import { readCancelAfterS } from "../core/deadline.js";
import type { Clock } from "../core/clock.js";
import { checkWellFormed } from "../core/well-formed.js";
import type { CommonRequest, CommonTask } from "../core/common-request.js";
import type { ConfigValues, MediagateConfig } from "../core/config.js";
import { BudgetError, ConfigError, InputError } from "../core/errors.js";
import { formatMicroUsd } from "../core/money.js";
import { LOCAL_TENANT } from "../core/tenant.js";
import { newId } from "../core/ids.js";
import { isTerminal, type Job, type JobOutput } from "../core/job.js";
import { validateRef } from "../core/ref.js";
import { type BudgetWording, checkBudget } from "../engine/budget.js";
import type { Engine } from "../engine/engine.js";
import { routedRequestFrom, type RouteBy } from "../engine/route.js";
import { waitForJobs } from "../engine/wait.js";
import { defaultOutputs } from "../outputs/by-location.js";
import { outputFolderProblem } from "../outputs/local-folder.js";
import { resolveOutputLocation } from "../outputs/location.js";
import type { Estimate, JobRequest } from "../providers/adapter.js";
import type { JobFilter, Store } from "../store/store.js";
import { admitted, prepareRequest } from "./intake.js";
import { readImageAs } from "./local-images.js";
import { newJobOf, requireConfigured, sameRequest } from "./prepare.js";
import { createRuntime, type Runtime } from "./runtime.js";
import { DEFAULT_STOP_TIMEOUT_S, stopWithin } from "./stop.js";
import { NO_TIMING, Timings, type JobTiming } from "./eta.js";

/** How the library's budget is named when it refuses. */
const LIBRARY_BUDGET: BudgetWording = {
  budget: (ceiling) => `the budget of ${ceiling}`,
  setBy: " (MEDIAGATE_BUDGET_USD)",
  committedBy: "this instance's earlier jobs",
  unpricedRemedy: "unpriced jobs run only without MEDIAGATE_BUDGET_USD",
};

export interface MediagateOptions {
  /** Configuration values by their MEDIAGATE_* names; defaults to process.env. */
  env?: NodeJS.ProcessEnv | ConfigValues;
  /** A config file (same keys). */
  configFile?: string;
  clock?: Clock;
  /** Run the engine in this process (default true). With PostgreSQL, separate workers may do it instead. */
  runEngine?: boolean;
}

/**
 * A common request for the library: the fields of a batch line's common form
 * (`task`, `prompt`, `size`, …, `model: "d/gen-2-pro"` or `route: [...]`,
 * `route_by`, `fallback_on_failure`, `provider_options`). Images are URLs,
 * local file paths, or files already read (`{ fileName, bytes }`).
 */
export type CommonSubmitRequest = Omit<CommonRequest, "task"> & {
  task: CommonTask;
  model?: string;
  route?: string[];
  route_by?: RouteBy;
  fallback_on_failure?: boolean;
};

export interface SubmitOptions {
  /** Your unique reference; submitting the same ref again returns the stored job. */
  ref?: string;
  /** Where outputs are saved: a folder or an `s3://bucket/prefix` (default MEDIAGATE_OUTPUT_DIR). */
  outDir?: string;
  /** Not sent within this many seconds (1 to 2,592,000), the job is cancelled; accepted by then, it is cancelled at providers that publish a cancel (E). */
  cancelAfterS?: number;
}

/**
 * The library: open a store, submit jobs, wait for them with progress, list,
 * cancel, quote. Validation and the budget check happen before anything is
 * stored or sent. The library's user is the local operator; the AI SDK
 * provider makes its calls through an instance of this class.
 */
export class Mediagate {
  private constructor(
    private readonly runtime: Runtime,
    private readonly store: Store,
    private readonly engine: Engine,
    private readonly runEngine: boolean,
    /** This instance's budget in the store, when MEDIAGATE_BUDGET_USD is set: a ceiling on what its jobs may commit. */
    private readonly budgetId: string | null,
  ) {}

  get config(): MediagateConfig {
    return this.runtime.config;
  }

  static async open(options: MediagateOptions = {}): Promise<Mediagate> {
    const runtime = createRuntime({
      env: options.env ?? process.env,
      ...(options.configFile ? { configFile: options.configFile } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    });
    const store = await runtime.store();
    const engine = await runtime.engine();
    const budgetId = runtime.config.budgetMicroUsd !== null ? `library:${engine.owner}` : null;
    if (budgetId !== null) await store.setBudget(budgetId, runtime.config.budgetMicroUsd!, Date.now());
    const gate = new Mediagate(runtime, store, engine, options.runEngine ?? true, budgetId);
    if (gate.runEngine) engine.start();
    return gate;
  }

  /** Validates (reading the provider's catalog first where it has one) and estimates; a common request is routed within what the budget leaves. */
  private async prepare(request: JobRequest | CommonSubmitRequest, ref: string, committedMicroUsd: number) {
    const ceiling = this.config.budgetMicroUsd;
    const parsed = "task" in request ? routedRequestFrom(request as unknown as Record<string, unknown>, readImageAs, []) : request;
    return prepareRequest(this.runtime, ref, parsed, "request", { budgetLeftMicroUsd: ceiling === null ? null : ceiling - committedMicroUsd });
  }

  /** The estimate of a request (native, or common: its chosen target's); nothing is submitted. */
  async quote(request: JobRequest | CommonSubmitRequest): Promise<Estimate & { warnings: string[]; target?: string }> {
    const { validated, estimate, route } = await this.prepare(request, "quote", 0);
    return { ...estimate, warnings: validated.warnings, ...(route ? { target: route.order[0]!.target.name } : {}) };
  }

  /**
   * Validates, estimates, checks the budget and queues one job: a native
   * request (`{provider, model, input}`), or a common one (`{task, prompt,
   * …, model: "d/gen-2-pro" | route: [...]}`) sent to the first eligible
   * target of its route and moved to the next if a target refuses it before
   * accepting.
   */
  async submit(request: JobRequest | CommonSubmitRequest, options: SubmitOptions = {}): Promise<Job> {
    if (options.ref !== undefined) validateRef(options.ref, "ref");
    const cancelAfterS = readCancelAfterS(options.cancelAfterS, "cancelAfterS");
    // A path is written in UTF-8: a lone surrogate would name another folder.
    if (options.outDir !== undefined) checkWellFormed(options.outDir, "outDir");
    const committed = this.budgetId !== null ? ((await this.store.budget(this.budgetId))?.committedMicroUsd ?? 0) : 0;
    const now = Date.now();
    const prepared = await this.prepare(request, options.ref ?? newId("ref", now), committed);
    requireConfigured(this.runtime, [prepared]);
    const outDir = resolveOutputLocation(options.outDir ?? this.config.outputDir);
    // The folder is proved writable before the job is stored: a result rendered and paid for needs somewhere to go.
    const folderProblem = await outputFolderProblem(outDir, defaultOutputs);
    if (folderProblem) {
      if (options.outDir !== undefined) throw new InputError("outDir", `${folderProblem.message}; nothing was sent`, "a folder this process can create and write, or an s3://bucket/prefix it can write in");
      throw new ConfigError("MEDIAGATE_OUTPUT_DIR", `MEDIAGATE_OUTPUT_DIR: ${folderProblem.message}; nothing was sent`);
    }
    checkBudget([{ label: options.ref ?? "job", estimateMicroUsd: prepared.estimate.microUsd }], this.config.budgetMicroUsd, false, committed, LIBRARY_BUDGET);
    // Stored with its estimate reserved in this instance's budget, in one transaction: concurrent submits never pass it.
    const outcome = await admitted(this.runtime, {
      tenant: LOCAL_TENANT,
      jobs: [newJobOf({ ...prepared, cancelAfterS }, { now, batchId: null, outDir, budgetId: this.budgetId, trace: this.runtime.jobTrace() })],
      budgetId: this.budgetId,
      differs: (stored) => !sameRequest(stored, prepared),
      idempotency: null,
      batchId: null,
    });
    if (outcome.kind === "ref_conflict") {
      // The ref is taken by another request: returning that job would hand back a result that was not asked for.
      throw new InputError("ref", `"${outcome.stored.ref}" is already used by job ${outcome.stored.id} with a different request; a ref names one job of yours`, "a new ref, or the same request to resume it");
    }
    if (outcome.kind === "over_budget") {
      const { budget, neededMicroUsd } = outcome;
      throw new BudgetError(budget.committedMicroUsd + neededMicroUsd, budget.ceilingMicroUsd, `estimated cost ${formatMicroUsd(neededMicroUsd)} is more than is left of ${LIBRARY_BUDGET.budget(formatMicroUsd(budget.ceilingMicroUsd))}${LIBRARY_BUDGET.setBy} (${formatMicroUsd(Math.max(0, budget.ceilingMicroUsd - budget.committedMicroUsd))}); nothing was sent`);
    }
    if (outcome.kind !== "admitted") throw new Error(`the job was not admitted (${outcome.kind})`);
    const [entry] = outcome.jobs;
    if (entry!.created) this.engine.wake();
    return entry!.job;
  }

  /** Resolves when the job is terminal (or blocked behind a halted provider). */
  async wait(jobId: string, options: { onProgress?: (job: Job) => void; signal?: AbortSignal } = {}): Promise<Job> {
    await waitForJobs(this.engine, this.store, [jobId], {
      ...(options.onProgress ? { onChange: options.onProgress } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return (await this.store.getJob(jobId))!;
  }

  get(idOrRef: string): Promise<Job | null> {
    return this.store.findJob(idOrRef);
  }

  list(filter: JobFilter = {}): Promise<Job[]> {
    return this.store.listJobs(filter);
  }

  outputs(jobId: string): Promise<JobOutput[]> {
    return this.store.outputs(jobId);
  }

  /**
   * When a job is expected to start and finish (ms since the epoch), and its
   * position among the jobs waiting for its provider: each null while
   * unknown or not waiting (see the README's "When will it finish").
   */
  async timing(jobId: string): Promise<JobTiming> {
    const job = await this.store.findJob(jobId);
    if (!job) return NO_TIMING;
    return new Timings(this.runtime, this.store).one(job, Date.now());
  }

  /** Cancels a queued job locally. Returns false when it was already sent (or finished). */
  async cancel(jobId: string): Promise<boolean> {
    const job = await this.store.findJob(jobId);
    if (!job || isTerminal(job.state)) return false;
    const moved = await this.store.transition(job.id, { state: "queued" }, "cancelled", { reason: "cancelled before submit" }, "cancelled before submit", Date.now());
    return moved !== null;
  }

  /**
   * Stops the engine (submits in flight record their answer, leases are
   * released) and closes the store, giving up after `timeoutMs` (default
   * 20 s) when the store does not answer: a close never hangs. What could
   * not be done then is safe to leave (leases expire; the next engine
   * resumes the jobs); `"timed_out"` says it happened. A submit's answer not
   * yet recorded then goes on being offered to the store while the process
   * lives, without keeping it alive: nothing of this instance holds the
   * process open past the store driver's own timeouts.
   */
  async close(options: { timeoutMs?: number } = {}): Promise<"closed" | "timed_out"> {
    const outcome = await stopWithin(async () => {
      if (this.runEngine) await this.engine.stop();
      await this.runtime.finishTraces();
      await this.store.close();
    }, options.timeoutMs ?? DEFAULT_STOP_TIMEOUT_S * 1000);
    if (outcome.kind === "failed") throw new Error(`mediagate: close failed: ${outcome.message}`);
    if (outcome.kind === "stopped") return "closed";
    this.engine.giveUp();
    return "timed_out";
  }
}
