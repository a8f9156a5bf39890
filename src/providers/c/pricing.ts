import type { Charge, Estimate, ProviderStatus } from "../adapter.js";

/** spec C: the service bills in credits; its prices are not in the spec. */
const UNPRICED = "unpriced: C's prices are not in the spec";

export function estimateC(): Estimate {
  return { microUsd: null, source: UNPRICED };
}

export function chargeC(outcome: ProviderStatus): Charge {
  if (outcome.kind === "failed" && outcome.code === "moderation_failed") {
    // spec C: moderation failure (7) refunds the credits, so the net charge is known to be zero.
    return { microUsd: 0, source: "C refunds the credits of a moderation failure (status 7)" };
  }
  return { microUsd: null, source: UNPRICED };
}
