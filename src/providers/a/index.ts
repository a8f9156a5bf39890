export { createAAdapter, type AAdapterConfig } from "./adapter.js";
export { A_BASE_PATHS, type APlan } from "./paths.js";
export { A_TASK_KINDS, type ATaskKind } from "./task-kind.js";
export { DEFAULT_A_WIRE_NAMES, type AWireNames } from "./wire-names.js";
export { DEFAULT_NEWEST_GENERATION, parseModelIdentity } from "./models.js";
export type { AUsage } from "./usage.js";
