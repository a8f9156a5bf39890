import { ConfigError } from "../../core/errors.js";

/** spec C Limits: concurrent generating tasks per account, by membership tier (not changed by buying credits). */
export const C_TIER_SLOTS = { free: 3, essential: 15, scale: 20, business: 25 } as const;
export type CTier = keyof typeof C_TIER_SLOTS;

export function slotsOfTier(tier: string): number {
  if (!Object.hasOwn(C_TIER_SLOTS, tier)) {
    throw new ConfigError("MEDIAGATE_C_TIER", `MEDIAGATE_C_TIER must be one of ${Object.keys(C_TIER_SLOTS).join(", ")}, got "${tier}"`);
  }
  return C_TIER_SLOTS[tier as CTier];
}
