import type { Clock } from "../core/clock.js";
import { LOG_LEVELS, type ConfigValues } from "../core/config.js";
import { InputError } from "../core/errors.js";
import { readUsd, USD_ALLOWED } from "../core/money.js";
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

/** Micro-USD from a flag taking dollars (`--budget-usd`), or an InputError naming the flag: a flag's mistake is the command line's (exit 2), not the configuration's. */
export function usdFlag(flag: string, text: string): number {
  const reading = readUsd(text);
  if ("reason" in reading) throw new InputError(flag, reading.reason, USD_ALLOWED);
  return reading.microUsd;
}

/** The runtime a command runs on: its flags over the environment and the config file. */
export function runtimeOf(options: GlobalOptions, extra: ConfigValues = {}, engineOptions: { clock?: Clock } = {}): Runtime {
  const overrides: ConfigValues = { ...extra };
  if (options.store) overrides.MEDIAGATE_STORE = options.store;
  if (options.outputDir) overrides.MEDIAGATE_OUTPUT_DIR = options.outputDir;
  if (options.budgetUsd !== undefined) {
    usdFlag("--budget-usd", options.budgetUsd);
    overrides.MEDIAGATE_BUDGET_USD = options.budgetUsd;
  }
  if (options.logLevel !== undefined) {
    if (!(LOG_LEVELS as readonly string[]).includes(options.logLevel)) throw new InputError("--log-level", `"${options.logLevel.slice(0, 40)}" is not a log level`, LOG_LEVELS.join(", "));
    overrides.MEDIAGATE_LOG_LEVEL = options.logLevel;
  }
  return createRuntime({ overrides, ...(options.config ? { configFile: options.config } : {}), ...(engineOptions.clock ? { clock: engineOptions.clock } : {}) });
}
