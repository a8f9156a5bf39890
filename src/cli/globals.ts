import type { Clock } from "../core/clock.js";
import type { ConfigValues } from "../core/config.js";
import { createRuntime, type Runtime } from "../app/runtime.js";

/** Options every command accepts. */
export interface GlobalOptions {
  json?: boolean;
  config?: string;
  store?: string;
  outputDir?: string;
  budgetUsd?: string;
  logLevel?: string;
}

/** The runtime a command runs on: its flags over the environment and the config file. */
export function runtimeOf(options: GlobalOptions, extra: ConfigValues = {}, engineOptions: { clock?: Clock } = {}): Runtime {
  const overrides: ConfigValues = { ...extra };
  if (options.store) overrides.MEDIAGATE_STORE = options.store;
  if (options.outputDir) overrides.MEDIAGATE_OUTPUT_DIR = options.outputDir;
  if (options.budgetUsd) overrides.MEDIAGATE_BUDGET_USD = options.budgetUsd;
  if (options.logLevel) overrides.MEDIAGATE_LOG_LEVEL = options.logLevel;
  return createRuntime({ overrides, ...(options.config ? { configFile: options.config } : {}), ...(engineOptions.clock ? { clock: engineOptions.clock } : {}) });
}
