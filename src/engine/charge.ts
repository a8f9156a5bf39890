import type { Job } from "../core/job.js";
import type { ProviderAdapter, ProviderStatus, ValidatedRequest } from "../providers/adapter.js";
import type { JobPatch, TransitionExtras } from "../store/store.js";

/**
 * What a job's end means for its charge. A provider that settles later (B)
 * leaves it pending and due for a read now; otherwise the adapter computes it
 * and the ledger gets it in the same transition.
 */
export function chargeAtEnd(
  adapter: ProviderAdapter,
  request: ValidatedRequest,
  status: ProviderStatus,
  job: Pick<Job, "providerJobId">,
  now: number,
): { patch: JobPatch; extras: TransitionExtras } {
  if (adapter.settle && job.providerJobId) {
    return {
      patch: { chargeMicroUsd: null, chargeSource: "awaiting the provider's settlement", chargeState: "pending", nextAttemptAt: now },
      extras: {},
    };
  }
  const charge = adapter.charge(request, status);
  return {
    patch: { chargeMicroUsd: charge.microUsd, chargeSource: charge.source, chargeState: charge.microUsd === null ? "none" : "computed" },
    extras: charge.microUsd !== null ? { ledger: { microUsd: charge.microUsd, source: charge.source } } : {},
  };
}
