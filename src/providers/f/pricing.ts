import type { Charge, Estimate, ProviderStatus } from "../adapter.js";

/**
 * spec F Limits: "Generation is billed per image", and no price is given
 * anywhere in the spec, so F jobs are unpriced: never a guessed number.
 */
export const F_PRICE_SOURCE = "unpriced: F bills per image but publishes no price";

export function estimateF(): Estimate {
  return { microUsd: null, source: F_PRICE_SOURCE };
}

/** F reports no charge either; the image count of a finished job is recorded beside the unknown amount. */
export function chargeF(outcome: ProviderStatus): Charge {
  if (outcome.kind !== "succeeded") return { microUsd: null, source: `${F_PRICE_SOURCE}; whether unfinished generations are billed is not shown` };
  const images = outcome.outputs.length;
  return { microUsd: null, source: `${F_PRICE_SOURCE}; ${images} image${images === 1 ? "" : "s"} generated` };
}
