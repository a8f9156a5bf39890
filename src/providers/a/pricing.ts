import type { Charge, Estimate, ProviderStatus } from "../adapter.js";
import { StoredUsage } from "./usage.js";

/**
 * spec A: "Usage is billed in tokens. A per-second price is not part of the
 * interface." Without a configured per-token rate nothing is priced; with
 * one, the charge is the tokens A reports times the rate. No estimate is
 * made before the job: the spec gives no way to predict the token count.
 */
export function estimateA(microUsdPerToken: number | null): Estimate {
  if (microUsdPerToken === null) return { microUsd: null, source: "unpriced: A bills in tokens; set a per-token rate" };
  return {
    microUsd: null,
    source: `unpriced before the job: A bills in tokens counted after generation and the spec gives no way to predict them; charged at ${microUsdPerToken} micro-USD per token once A reports usage`,
  };
}

export function chargeA(outcome: ProviderStatus, microUsdPerToken: number | null): Charge {
  if (outcome.kind !== "succeeded") {
    return { microUsd: null, source: `A reported ${outcome.providerStatus} and no usage; whether it bills such a task is not shown` };
  }
  const usage = StoredUsage.safeParse(outcome.usage);
  const tokens = usage.success ? usage.data.tokens : null;
  if (microUsdPerToken === null) {
    return { microUsd: null, source: `unpriced: A bills in tokens; set a per-token rate${tokens !== null ? ` (${tokens} tokens used)` : ""}` };
  }
  if (tokens === null) return { microUsd: null, source: "A reported no token count for this task" };
  return { microUsd: Math.round(tokens * microUsdPerToken), source: `${tokens} tokens × ${microUsdPerToken} micro-USD per token (configured rate)` };
}
