import { ProviderError } from "../../core/errors.js";
import type { Settlement } from "../adapter.js";
import { billingOf, type BJob } from "./job-object.js";

/** spec B Billing state `pending`: "re-read at 1 s, 2 s, then 5 s" — waits between reads, the last repeated. */
export const PENDING_REREAD_MS: readonly number[] = [1_000, 2_000, 5_000];
/** spec B Billing state `unavailable`: "re-read no sooner than 30 s". */
export const UNAVAILABLE_REREAD_MS = 30_000;
/** Jobs whose pending reads are counted at once; beyond it the oldest count is dropped (it restarts at 1 s, a harmless extra read). */
const MAX_COUNTED_JOBS = 10_000;

/**
 * How many times each job's billing has read `pending`, in memory. The
 * schedule cannot live in the job's handles (they are fixed at submit) and
 * the job object's timestamps are not shown by the spec, so the adapter
 * counts. After a restart a count starts again at 1 s: at worst two extra reads.
 */
export class PendingReads {
  private readonly counts = new Map<string, number>();

  /** The wait before the next read, counting this pending answer. */
  next(providerJobId: string): number {
    const seen = this.counts.get(providerJobId) ?? 0;
    this.counts.delete(providerJobId);
    this.counts.set(providerJobId, seen + 1);
    if (this.counts.size > MAX_COUNTED_JOBS) this.counts.delete(this.counts.keys().next().value!);
    return PENDING_REREAD_MS[Math.min(seen, PENDING_REREAD_MS.length - 1)]!;
  }

  forget(providerJobId: string): void {
    this.counts.delete(providerJobId);
  }
}

/**
 * The settlement a job object shows, per spec B's billing-state table. Only
 * `settled` is a charge; a null billing is not one (it is what an unfinished
 * job, a submit answer and a webhook carry); a state the spec does not list
 * means the billing cannot be read, so it is treated as `unavailable`.
 */
export function settlementOf(job: BJob, raw: unknown, pendingReads: PendingReads): Settlement {
  const billing = billingOf(job);
  if (billing === null || job.status === "queued" || job.status === "running") {
    return { kind: "pending", retryAfterMs: pendingReads.next(job.id), raw };
  }
  switch (billing.state) {
    case "pending":
      return { kind: "pending", retryAfterMs: pendingReads.next(job.id), raw };
    case "unavailable":
      return { kind: "unavailable", retryAfterMs: UNAVAILABLE_REREAD_MS, raw };
    case "settled": {
      const charge = billing.chargeMicroUsd;
      if (typeof charge !== "number" || !Number.isSafeInteger(charge) || charge < 0) {
        throw new ProviderError("invalid_response", `B reports job ${job.id} settled without an integer charge_micro_usd (got ${JSON.stringify(charge) ?? "nothing"})`, {
          provider: "b",
          retryable: false,
          rawBody: JSON.stringify(raw).slice(0, 2_000),
        });
      }
      pendingReads.forget(job.id);
      // spec B: record spend from charge_micro_usd only in this state; a failed job settles at 0.
      return { kind: "settled", microUsd: charge, raw };
    }
    default:
      return { kind: "unavailable", retryAfterMs: UNAVAILABLE_REREAD_MS, raw };
  }
}
