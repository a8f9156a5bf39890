import { type Clock, systemClock } from "./core/clock.js";
import { configSecrets, loadConfig, type ConfigValues, type MediagateConfig } from "./core/config.js";
import { ConfigError, InputError } from "./core/errors.js";
import { newId } from "./core/ids.js";
import { validateRef } from "./core/ref.js";
import { isTerminal, type Job, type JobOutput } from "./core/job.js";
import { checkBudget } from "./engine/budget.js";
import { Engine } from "./engine/engine.js";
import { createLogger } from "./engine/logger.js";
import { waitForJobs } from "./engine/wait.js";
import { DEFAULT_STOP_TIMEOUT_S, stopWithin } from "./cli/stop.js";
import type { Estimate, JobRequest, ValidatedRequest } from "./providers/adapter.js";
import type { CommonRequest, CommonTask } from "./core/common-request.js";
import { planRoute, routedRequestFrom, type RouteBy } from "./engine/route.js";
import { newJobOf, readImageAs, sameRequest, type PreparedJob } from "./cli/prepare.js";
import { createProviderRegistry, type ProviderEntry } from "./providers/registry.js";
import { defaultOutputs } from "./outputs/by-location.js";
import { outputFolderProblem } from "./outputs/local-folder.js";
import { resolveOutputLocation } from "./outputs/location.js";
import { notificationPolicyOf, notifierOf } from "./server/notifications.js";
import { openStore } from "./store/open.js";
import type { JobFilter, Store } from "./store/store.js";

export type { Job, JobOutput, JobState, JobEvent } from "./core/job.js";
export type { JobRequest, Estimate, ProviderId } from "./providers/adapter.js";
export type { CommonRequest, CommonTask, ImageInput } from "./core/common-request.js";
export { NoEligibleTargetError, type TargetVerdict } from "./engine/route.js";
export { InputError, ConfigError, BudgetError, ProviderError, MediagateError } from "./core/errors.js";
export { formatMicroUsd, usdToMicroUsd } from "./core/money.js";
// Webhook verification usable on its own (without the engine or `mediagate serve`).
export { BWebhookError, verifyBWebhook, type BWebhookEvent } from "./providers/b/index.js";
export {
  createFWebhookVerifier,
  FWebhookVerificationError,
  type FVerifiedDelivery,
  type FWebhookVerifier,
  type FWebhookVerifierOptions,
} from "./providers/f/index.js";

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
}

/**
 * The library: open a store, submit jobs, wait for them with progress, list,
 * cancel, quote. Validation and the budget check happen before anything is
 * stored or sent.
 */
export class Mediagate {
  private constructor(
    readonly config: MediagateConfig,
    private readonly store: Store,
    private readonly providers: Map<string, ProviderEntry>,
    private readonly engine: Engine,
    private readonly runEngine: boolean,
    /** This instance's budget in the store, when MEDIAGATE_BUDGET_USD is set: a ceiling on what its jobs may commit. */
    private readonly budgetId: string | null,
  ) {}

  static async open(options: MediagateOptions = {}): Promise<Mediagate> {
    const config = loadConfig({
      env: (options.env ?? process.env) as NodeJS.ProcessEnv,
      ...(options.configFile ? { configFile: options.configFile } : {}),
    });
    const providers = createProviderRegistry(config);
    const store = await openStore(config.store, { poolSize: config.storePoolSize });
    store.setNotificationPolicy(notificationPolicyOf(config));
    const secrets = () => [...configSecrets(config), ...[...providers.values()].flatMap((entry) => entry.adapter?.secrets?.() ?? [])];
    const engine = new Engine({
      store,
      providers,
      secrets,
      clock: options.clock ?? systemClock,
      allowPrivateUrls: config.allowPrivateUrls,
      publicUrl: config.publicUrl,
      fallbackAfterMs: config.fallbackAfterMs,
      notifications: notifierOf(config),
      log: createLogger({ level: config.values.MEDIAGATE_LOG_LEVEL ?? "warn", secrets }),
    });
    const budgetId = config.budgetMicroUsd !== null ? `library:${engine.owner}` : null;
    if (budgetId !== null) await store.setBudget(budgetId, config.budgetMicroUsd!, Date.now());
    const gate = new Mediagate(config, store, providers, engine, options.runEngine ?? true, budgetId);
    if (gate.runEngine) engine.start();
    return gate;
  }

  private entry(request: JobRequest): ProviderEntry & { adapter: NonNullable<ProviderEntry["adapter"]> } {
    const entry = this.providers.get(request.provider);
    if (!entry?.adapter) throw new InputError("provider", `provider ${request.provider} is not supported by this version`, "d");
    return entry as ProviderEntry & { adapter: NonNullable<ProviderEntry["adapter"]> };
  }

  /** Validates (reading the provider's catalog first where it has one) and estimates (its quote where it has one). */
  private async prepare(request: JobRequest) {
    const entry = this.entry(request);
    const context = entry.missing.length === 0 ? await this.engine.providerContext(request.provider) : undefined;
    if (entry.adapter.prefetch) {
      if (!context) throw new ConfigError(entry.missing[0]!, `provider ${request.provider.toUpperCase()} is not configured: set ${entry.missing.join(" and ")}`);
      await entry.adapter.prefetch(request, context);
    }
    const validated = entry.adapter.validate(request);
    const estimate = await entry.adapter.estimate(validated, context);
    return { entry, validated, estimate };
  }

  /**
   * A common request (issue 11) routed: every target judged before anything
   * is sent, the first eligible one (or the cheapest, by `route_by`) chosen.
   */
  private async prepareRouted(request: CommonSubmitRequest, committedMicroUsd: number) {
    const routed = routedRequestFrom(request as unknown as Record<string, unknown>, readImageAs, []);
    const ceiling = this.config.budgetMicroUsd;
    const { order, verdicts } = await planRoute(routed.common, routed.targets, routed.routeBy, {
      adapter: (provider) => {
        const entry = this.providers.get(provider);
        return { adapter: entry?.adapter ?? null, missing: entry?.missing ?? [] };
      },
      context: (provider) => this.engine.providerContext(provider),
      halted: async () => new Map((await this.store.halts()).map((halt) => [halt.provider, `${halt.code}: ${halt.message}`])),
      budget: { leftMicroUsd: ceiling === null ? null : ceiling - committedMicroUsd, allowUnpriced: false },
    });
    const chosen = order[0]!;
    return { validated: chosen.validated, estimate: chosen.estimate, route: { order, verdicts, fallbackOnFailure: routed.fallbackOnFailure } };
  }

  /** The estimate of a request (native, or common: its chosen target's); nothing is submitted. */
  async quote(request: JobRequest | CommonSubmitRequest): Promise<Estimate & { warnings: string[]; target?: string }> {
    if ("task" in request) {
      const { validated, estimate, route } = await this.prepareRouted(request, 0);
      return { ...estimate, warnings: validated.warnings, target: route.order[0]!.target.name };
    }
    const { validated, estimate } = await this.prepare(request);
    return { ...estimate, warnings: validated.warnings };
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
    const committed = this.budgetId !== null ? ((await this.store.budget(this.budgetId))?.committedMicroUsd ?? 0) : 0;
    let validated: ValidatedRequest;
    let estimate: Estimate;
    let route: PreparedJob["route"];
    if ("task" in request) {
      ({ validated, estimate, route } = await this.prepareRouted(request, committed));
    } else {
      const prepared = await this.prepare(request);
      if (prepared.entry.missing.length) {
        throw new ConfigError(prepared.entry.missing[0]!, `provider ${request.provider.toUpperCase()} is not configured: set ${prepared.entry.missing.join(" and ")}`);
      }
      ({ validated, estimate } = prepared);
    }
    const outDir = resolveOutputLocation(options.outDir ?? this.config.outputDir);
    // The folder is proved writable before the job is stored: a result rendered and paid for needs somewhere to go.
    const folderProblem = await outputFolderProblem(outDir, defaultOutputs);
    if (folderProblem) {
      if (options.outDir !== undefined) throw new InputError("outDir", `${folderProblem.message}; nothing was sent`, "a folder this process can create and write, or an s3://bucket/prefix it can write in");
      throw new ConfigError("MEDIAGATE_OUTPUT_DIR", `MEDIAGATE_OUTPUT_DIR: ${folderProblem.message}; nothing was sent`);
    }
    checkBudget([{ label: options.ref ?? "job", estimateMicroUsd: estimate.microUsd }], this.config.budgetMicroUsd, false, committed);
    const now = Date.now();
    const prepared = { ref: options.ref ?? newId("ref", now), validated, estimate, route };
    const [result] = await this.store.insertJobs([newJobOf(prepared, { now, batchId: null, outDir, budgetId: this.budgetId })], now);
    if (!result!.created && !sameRequest(result!.job, prepared)) {
      // The ref is taken by another request: returning that job would hand back a result that was not asked for.
      throw new InputError("ref", `"${result!.job.ref}" is already used by job ${result!.job.id} with a different request; refs are unique in a store`, "a new ref, or the same request to resume it");
    }
    this.engine.wake();
    return result!.job;
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
      await this.store.close();
    }, options.timeoutMs ?? DEFAULT_STOP_TIMEOUT_S * 1000);
    if (outcome.kind === "failed") throw new Error(`mediagate: close failed: ${outcome.message}`);
    if (outcome.kind === "stopped") return "closed";
    this.engine.giveUp();
    return "timed_out";
  }
}
