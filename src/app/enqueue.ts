import { BudgetError } from "../core/errors.js";
import { InputError } from "../core/errors.js";
import { isTerminal, type Job } from "../core/job.js";
import { formatMicroUsd } from "../core/money.js";
import { LOCAL_TENANT } from "../core/tenant.js";
import { type BudgetCheck, checkBudget, COMMAND_BUDGET } from "../engine/budget.js";
import { newJobOf, type PreparedJob, requireConfigured, sameRequest } from "./prepare.js";
import type { Runtime } from "./runtime.js";

/** A command's intake (`generate`, `batch`, `demo`): its jobs stored a page at a time, resumed by ref when run again. */

export interface EnqueueOptions {
  batchId: string | null;
  outDir: string;
  allowUnpriced?: boolean;
  budgetId: string;
}

/** Requests checked against the store, and stored, per page (a page of rows is all that is held at once). */
const ENQUEUE_PAGE = 500;

/** Pages stored at once on PostgreSQL (each on a connection of its own). */
const PAGES_SIDE_BY_SIDE = 2;

export interface EnqueueResult {
  /** The jobs' ids, in the order of the requests (ids, not rows: a batch of 20,000 is not held whole). */
  jobIds: string[];
  created: number;
  /** Stored before and not finished: this run takes them up. */
  resumed: number;
  /** Stored before and finished already. */
  finished: number;
  budget: BudgetCheck;
}

/**
 * Stores the jobs (a ref that exists is resumed, not resubmitted), after the
 * configuration and budget checks: nothing is queued if any check fails.
 *
 * The budget (`--budget-usd`, or the one an earlier run of the same command
 * left in the store) is a ceiling on what this command's jobs may commit:
 * what earlier runs already committed, plus the estimate of every job this
 * run will send (new ones and queued ones, including any queued again after
 * a refused submit). The budget is kept in the store under `budgetId` and the
 * engine holds each job's estimate in it when it sends it, so the ceiling
 * also holds for a worker sending these jobs, and for charges above estimates.
 *
 * Jobs of this command not finished yet (running, or rendered but not saved)
 * are pointed at `outDir`, so a re-run with a good folder saves what an
 * earlier run could not.
 */
export async function enqueue(
  runtime: Runtime,
  prepared: readonly PreparedJob[],
  options: EnqueueOptions,
): Promise<EnqueueResult> {
  const store = await runtime.store();
  // What is stored under these refs already: read a page at a time, and only its state and budget kept.
  const existing = new Map<string, Pick<Job, "state" | "budgetId" | "budgetHeldMicroUsd">>();
  for (let start = 0; start < prepared.length; start += ENQUEUE_PAGE) {
    const page = prepared.slice(start, start + ENQUEUE_PAGE);
    const byRef = new Map((await store.jobsByRefs(LOCAL_TENANT, page.map((item) => item.ref))).map((job) => [job.ref, job]));
    for (const item of page) {
      const job = byRef.get(item.ref);
      if (!job) continue;
      if (!sameRequest(job, item)) {
        throw new InputError(
          `${item.origin}: ref`,
          `"${item.ref}" is already used by job ${job.id} with a different request; a ref names one job of yours`,
          "a new ref, or the same request to resume it",
        );
      }
      if (!isTerminal(job.state) && job.batchId !== options.batchId) {
        // A command works only on its own jobs: another command's unfinished job is not taken over by a shared ref.
        throw new InputError(
          `${item.origin}: ref`,
          `"${item.ref}" is job ${job.id} of another command (${job.batchId ? `batch ${job.batchId}` : "a generate"}, still ${job.state}); a ref names one job of yours`,
          "a new ref, or the command that queued it to resume it",
        );
      }
      existing.set(item.ref, { state: job.state, budgetId: job.budgetId, budgetHeldMicroUsd: job.budgetHeldMicroUsd });
    }
  }
  // Everything still queued will be sent by this run, whatever earlier runs tried.
  const toSend = prepared.filter((item) => {
    const job = existing.get(item.ref);
    return job === undefined || job.state === "queued";
  });
  requireConfigured(runtime, toSend);
  const stored = await store.budget(options.budgetId);
  const ceiling = runtime.config.budgetMicroUsd ?? stored?.ceilingMicroUsd ?? null;
  // A queued job holding its estimate in this budget (stored by an earlier run) is in what the budget has committed.
  const reserving = toSend.filter((item) => {
    const job = existing.get(item.ref);
    return job === undefined || job.budgetId !== options.budgetId || job.budgetHeldMicroUsd === 0;
  });
  const budget = checkBudget(
    reserving.map((item) => ({ label: item.ref, estimateMicroUsd: item.estimate.microUsd })),
    ceiling,
    options.allowUnpriced ?? false,
    stored?.committedMicroUsd ?? 0,
  );
  const now = Date.now();
  if (ceiling !== null) await store.setBudget(options.budgetId, ceiling, now);
  const queued: EnqueueResult = { jobIds: [], created: 0, resumed: 0, finished: 0, budget };
  // Every check passed: stored a page at a time, each page in its own transaction, so that no more than a
  // few pages of rows are held here. Interrupted between pages, the rest is stored by the next run (refs resume).
  const budgetId = ceiling !== null ? options.budgetId : null;
  const storePage = async (start: number) => {
    // Admitted as the API admits: each new job's estimate reserved in the budget as it is stored, the page refused
    // whole past the ceiling (another run of this command at once; the check above saw this one's share fit).
    const [outcome] = await store.admit(
      [
        {
          tenant: LOCAL_TENANT,
          jobs: prepared.slice(start, start + ENQUEUE_PAGE).map((item) => newJobOf(item, { now, batchId: options.batchId, outDir: options.outDir, budgetId, trace: runtime.jobTrace() })),
          budgetId,
          // Each stored ref was compared with its request above.
          differs: () => false,
          idempotency: null,
          batchId: options.batchId,
        },
      ],
      now,
    );
    if (outcome!.kind === "over_budget") {
      const { budget: status, neededMicroUsd } = outcome!;
      throw new BudgetError(status.committedMicroUsd + neededMicroUsd, status.ceilingMicroUsd, `estimated cost ${formatMicroUsd(neededMicroUsd)} of lines stored now is more than is left of ${COMMAND_BUDGET.budget(formatMicroUsd(status.ceilingMicroUsd))}${COMMAND_BUDGET.setBy} (${formatMicroUsd(Math.max(0, status.ceilingMicroUsd - status.committedMicroUsd))}: another run of this command committed the rest meanwhile); the lines before were stored and are resumed by the next run`);
    }
    if (outcome!.kind !== "admitted") throw new Error(`a page of the batch was not admitted (${outcome!.kind})`);
    const results = outcome!.jobs;
    const resumed = results.filter((result) => !result.created);
    if (ceiling !== null) await store.assignBudget(options.budgetId, resumed.map((result) => result.job.id), now);
    for (const { job } of resumed) {
      if (isTerminal(job.state) || (job.outDir === options.outDir && job.blockedCode === null)) continue;
      // A job still rendering or waiting to be saved is saved where this run says; one that was blocked
      // (its folder, its budget) is tried again now, by this run, which blocks it again if nothing changed.
      await store.updateJob(job.id, { state: job.state }, { outDir: options.outDir, ...(job.blockedCode !== null ? { blockedCode: null, nextAttemptAt: now } : {}) }, now);
    }
    return results;
  };
  // PostgreSQL stores pages side by side on connections of their own (its work, not this process's, is what a page
  // waits for); SQLite writes one transaction at a time anyway. Counted in the file's order whatever order they end in.
  const sideBySide = store.dialect === "postgres" ? PAGES_SIDE_BY_SIDE : 1;
  const starts: number[] = [];
  for (let start = 0; start < prepared.length; start += ENQUEUE_PAGE) starts.push(start);
  for (let first = 0; first < starts.length; first += sideBySide) {
    const pages = await Promise.all(starts.slice(first, first + sideBySide).map(storePage));
    for (const { job, created } of pages.flat()) {
      queued.jobIds.push(job.id);
      if (created) queued.created++;
      else if (isTerminal(job.state)) queued.finished++;
      else queued.resumed++;
    }
  }
  return queued;
}
