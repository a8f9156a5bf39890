import { isTerminal, type Job } from "../core/job.js";
import { submittedOf } from "../engine/track.js";
import type { BatchSummary } from "../store/store.js";
import { scopeOf, type Caller } from "./caller.js";
import { batchOf } from "./queries.js";
import type { Runtime } from "./runtime.js";

/** What a cancel did: each case says why in one sentence (`message`). */
export type CancelOutcome =
  | { kind: "cancelled"; job: Job; message: string }
  /** Nothing was cancelled: it ended already, is not at a stage that can be, or its provider has no cancel. */
  | { kind: "refused"; code: "ended" | "no_cancel_operation" | "not_cancellable" | "raced"; message: string };

/**
 * Cancels a job: a queued one locally (never sent, nothing charged); a
 * running one through its provider where the provider publishes a cancel
 * operation (E's `cancelUrl`), then locally so no more polls are spent on it.
 * Shared by `mediagate cancel` and the API.
 */
export async function cancelJob(runtime: Runtime, job: Job): Promise<CancelOutcome> {
  const store = await runtime.store();
  if (isTerminal(job.state)) return { kind: "refused", code: "ended", message: `${job.id} has already ended (${job.state}); nothing to cancel` };
  if (job.state === "queued") {
    const cancelled = await store.transition(job.id, { state: "queued" }, "cancelled", { reason: "cancelled by the user before submit" }, "cancelled by the user before submit", Date.now());
    if (cancelled) return { kind: "cancelled", job: cancelled, message: `cancelled ${job.id} (it was never sent; nothing charged)` };
    job = (await store.getJob(job.id)) ?? job;
  }
  const adapter = runtime.providers.get(job.provider)?.adapter;
  if (!adapter?.cancel) {
    return {
      kind: "refused",
      code: "no_cancel_operation",
      message: `${job.provider.toUpperCase()} publishes no cancel operation, so ${job.id} (${job.state}) keeps running at the provider; mediagate keeps tracking it and saves its result`,
    };
  }
  if (job.state !== "running" || !job.providerJobId) {
    return { kind: "refused", code: "not_cancellable", message: `${job.id} is ${job.state}; only a queued job or one running at the provider can be cancelled` };
  }
  const engine = await runtime.engine();
  const context = await engine.providerContext(job.provider);
  await adapter.cancel(submittedOf(job), { ...context, job: { id: job.id, idempotencyKey: job.idempotencyKey, callbackUrl: null } });
  const reason = `cancelled by the user at ${job.provider.toUpperCase()}`;
  // Terminal at once: no more polls are spent on it (an engine tracking it loses its compare-and-set and stops).
  const cancelled = await store.transition(job.id, { state: "running" }, "cancelled", { reason, leaseOwner: null, leaseExpiresAt: null }, reason, Date.now());
  if (!cancelled) {
    const current = await store.getJob(job.id);
    return { kind: "refused", code: "raced", message: `${job.provider.toUpperCase()} accepted the cancel, but ${job.id} had already become ${current?.state ?? "unknown"}` };
  }
  return { kind: "cancelled", job: cancelled, message: `cancelled ${job.id} at ${job.provider.toUpperCase()}` };
}

/** Queued jobs of a batch read and cancelled at a time: a page of the index, never the whole batch in memory. */
export const BATCH_CANCEL_PAGE = 200;

/** What cancelling a batch's unsent jobs did: how many were cancelled, and the batch as it is after. */
export interface BatchCancelOutcome {
  cancelled: number;
  summary: BatchSummary;
}

/**
 * Cancels every job of the batch not sent yet (queued), the caller's own
 * only unless admin: a page at a time, each job by compare-and-set from
 * queued, so one an engine claimed meanwhile (now submitting: its request
 * may be leaving, and may cost money) is left to run, and nothing already
 * sent is touched. Not found when the caller has no job in the batch.
 * Shared by the API (`POST /v1/batches/{id}/cancel`) and the dashboard.
 */
export async function cancelBatchUnsent(runtime: Runtime, caller: Caller, batchId: string): Promise<BatchCancelOutcome> {
  await batchOf(runtime, caller, batchId);
  const store = await runtime.store();
  const tenant = scopeOf(caller);
  const reason = `cancelled by the user before submit, with the rest of batch ${batchId} not sent`;
  let cancelled = 0;
  for (;;) {
    const page = await store.batchJobsInState(batchId, "queued", BATCH_CANCEL_PAGE, tenant);
    let moved = 0;
    for (const job of page) {
      if (await store.transition(job.id, { state: "queued" }, "cancelled", { reason }, reason, Date.now())) moved++;
    }
    cancelled += moved;
    // A short page was the last; a page whose every job was claimed first means the engines are taking the rest.
    if (page.length < BATCH_CANCEL_PAGE || moved === 0) break;
  }
  return { cancelled, summary: await batchOf(runtime, caller, batchId) };
}
