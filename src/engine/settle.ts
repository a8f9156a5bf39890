import { fullJitterBackoffMs } from "../core/backoff.js";
import type { Job } from "../core/job.js";
import type { ProviderStatus } from "../providers/adapter.js";
import { type EngineContext, validatedOf } from "./context.js";
import { submittedOf } from "./track.js";

/** Settlement reads stop this long after the job ended; the charge then stays unknown (shown as such). */
const SETTLEMENT_DEADLINE_MS = 7 * 24 * 3_600_000;

/** The end a finished job reached, as the adapter's settle expects it (its raw answer is not kept). */
function outcomeOf(job: Job): ProviderStatus {
  const providerStatus = job.providerStatus ?? job.state;
  if (job.state === "succeeded") return { kind: "succeeded", providerStatus, outputs: [], raw: null };
  if (job.state === "cancelled") return { kind: "cancelled", providerStatus, raw: null };
  if (job.state === "expired") return { kind: "expired", providerStatus, raw: null };
  return { kind: "failed", providerStatus, code: job.error?.code ?? "failed", message: job.error?.message ?? "", raw: null };
}

/**
 * One read of a finished job's charge at a provider that settles after the
 * end (B). Only `settled` writes the charge and the ledger; `pending` and
 * `unavailable` are read again when the adapter says.
 */
export async function settleJob(context: EngineContext, job: Job): Promise<void> {
  const { store, clock } = context;
  const adapter = context.adapter(job.provider);
  const now = clock.now();
  if (!adapter.settle || !job.providerJobId || now - (job.finishedAt ?? now) > SETTLEMENT_DEADLINE_MS) {
    await store.updateJob(job.id, { state: job.state }, { chargeState: "none", chargeSource: "the provider never settled this charge" }, now);
    return;
  }
  let settlement;
  try {
    const call = await context.callContext(job, validatedOf(job), { step: "settle" });
    settlement = await adapter.settle(submittedOf(job), outcomeOf(job), call);
  } catch (error) {
    if (context.signal.aborted) return;
    const wait = fullJitterBackoffMs(job.pollFailures + 1, { baseMs: 5_000, capMs: 300_000 });
    await store.updateJob(job.id, { state: job.state }, { nextAttemptAt: now + wait, pollFailures: job.pollFailures + 1, reason: `settlement read failed: ${(error as Error).message}` }, now);
    return;
  }
  const after = clock.now();
  if (settlement.kind === "settled") {
    const settled = await store.settleCharge(job.id, { microUsd: settlement.microUsd, source: `settled by ${job.provider.toUpperCase()}` }, after);
    if (settled) context.emit(settled);
    return;
  }
  await store.updateJob(job.id, { state: job.state }, { chargeState: settlement.kind, nextAttemptAt: after + settlement.retryAfterMs, pollFailures: 0 }, after);
}
