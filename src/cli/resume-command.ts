import { resolve } from "node:path";
import { formatMicroUsd } from "../core/money.js";
import { maskStoreAddress } from "../core/store-address.js";
import { resolveOutputLocation } from "../outputs/location.js";
import type { GlobalOptions } from "./globals.js";
import { DEFAULT_LISTED, MOST_LISTED } from "./jobs.js";
import type { Runtime } from "../app/runtime.js";

/** One argument as a POSIX shell reads it back: bare when it is plain, single-quoted otherwise. */
export function shellQuote(argument: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(argument)) return argument;
  return `'${argument.replace(/'/g, `'\\''`)}'`;
}

/** `sqlite:` paths made absolute, so the command resumes from any folder. */
function storeArgument(store: string): string {
  if (store.startsWith("sqlite:")) {
    const path = store.slice("sqlite:".length) || "./mediagate.db";
    return path === ":memory:" ? store : `sqlite:${resolve(path)}`;
  }
  return store;
}

export interface ResumeOptions {
  /**
   * The command's own arguments carry the output folder (`--out`), which
   * takes the place of the global `--output-dir`: the line names the folder
   * once, with the flag the user gave.
   */
  ownOutputFlag?: boolean;
}

/**
 * The global flags that decide what a command works on, resolved: the store,
 * the output folder (unless the command's own `--out` names it), the config
 * file and the budget (and `--json`, so the output has the same form).
 * Printed in a resume hint, they make it the command that resumes, whatever
 * the shell's environment is by then. A store password is masked.
 */
export function globalArguments(runtime: Runtime, options: GlobalOptions, resume: ResumeOptions = {}): string[] {
  const argumentsList = ["--store", maskStoreAddress(storeArgument(runtime.config.store))];
  if (!resume.ownOutputFlag) argumentsList.push("--output-dir", resolveOutputLocation(runtime.config.outputDir));
  if (options.config) argumentsList.push("--config", resolve(options.config));
  if (runtime.config.budgetMicroUsd !== null) argumentsList.push("--budget-usd", formatMicroUsd(runtime.config.budgetMicroUsd).replace(/^\$/, ""));
  if (options.json) argumentsList.push("--json");
  return argumentsList;
}

/**
 * The command line that resumes: `mediagate`, the global flags, the command
 * and its own arguments, each quoted for the shell. A store address with a
 * password is printed masked (secrets are never printed), with a note on the
 * next line saying what to put back.
 */
export function resumeCommand(runtime: Runtime, options: GlobalOptions, command: readonly string[], resume: ResumeOptions = {}): string {
  const line = ["mediagate", ...globalArguments(runtime, options, resume), ...command].map(shellQuote).join(" ");
  const masked = maskStoreAddress(runtime.config.store) !== runtime.config.store;
  return masked ? `${line}\n  (the store's password is shown as ***: put it back, or leave out --store where MEDIAGATE_STORE is set)` : line;
}

/**
 * The command a batch's summary prints to list all its jobs: on the store
 * and config file this run was given by flag (the environment is the same
 * when it is run next), and with a `--limit` that takes every job when there
 * are more than a listing shows by default.
 */
export function batchListCommand(options: GlobalOptions, batchId: string, jobCount: number): string {
  const words = ["mediagate"];
  if (options.store) words.push("--store", maskStoreAddress(storeArgument(options.store)));
  if (options.config) words.push("--config", resolve(options.config));
  words.push("jobs", "--batch", batchId);
  if (jobCount > DEFAULT_LISTED) words.push("--limit", String(Math.min(jobCount, MOST_LISTED)));
  return words.map(shellQuote).join(" ");
}
