import type { Charge, Estimate } from "../adapter.js";

/** spec E publishes no price for any operation: every estimate and charge is unknown, and says so. */
export const E_UNPRICED_SOURCE = "unpriced: E's spec publishes no price for its operations";

export function estimateE(): Estimate {
  return { microUsd: null, source: E_UNPRICED_SOURCE };
}

export function chargeE(): Charge {
  return { microUsd: null, source: `${E_UNPRICED_SOURCE}; E reports no charge` };
}
