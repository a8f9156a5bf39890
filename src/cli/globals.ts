import type { Clock } from "../core/clock.js";
import { LOG_LEVELS, type ConfigValues } from "../core/config.js";
import { ConfigError, InputError } from "../core/errors.js";
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

/** The settings a global flag overrides, by the variable its configuration error names. */
const FLAG_OF_VARIABLE: Record<string, { flag: string; given: (options: GlobalOptions) => boolean }> = {
  MEDIAGATE_STORE: { flag: "--store", given: (options) => Boolean(options.store) },
  MEDIAGATE_OUTPUT_DIR: { flag: "--output-dir", given: (options) => Boolean(options.outputDir) },
};

/**
 * A configuration error about a setting the command line gave is the command
 * line's mistake: an InputError naming the flag (exit 2), not the
 * configuration's (exit 3). Other errors are returned as they are.
 */
export function flagMistake(options: GlobalOptions, error: unknown): unknown {
  // Only a value refused as written (a malformed address): one that is well-formed but cannot be reached or opened
  // (store_unreachable) is the environment's state, not the command line's mistake, and stays exit 3.
  if (!(error instanceof ConfigError) || error.code !== "not_configured") return error;
  const setting = FLAG_OF_VARIABLE[error.variable];
  if (!setting?.given(options)) return error;
  // The message names the variable (and the flag beside it): the flag alone is named now.
  const reason = error.message.replace(`${error.variable} (or ${setting.flag}) `, "").replace(`${error.variable} `, "");
  return new InputError(setting.flag, reason);
}

/** The flag that chose the output folder, if one did (a command's `--out` over the global `--output-dir`): a problem with the folder names it. */
export function outputFlagOf(options: GlobalOptions, out: string | undefined): string | null {
  if (out !== undefined) return "--out";
  return options.outputDir ? "--output-dir" : null;
}
