import { isTerminal, type Job } from "../core/job.js";
import { submittedOf } from "../engine/track.js";
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
