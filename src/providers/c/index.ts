export { createCAdapter, type CAdapterConfig } from "./adapter.js";
export { C_TIER_SLOTS, type CTier } from "./tiers.js";
export { C_ERR_CODES } from "./error-codes.js";
export { C_SLOT_RELEASE_MS } from "./result-status.js";
