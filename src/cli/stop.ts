import type { Command } from "commander";
import { EXIT } from "./exit-codes.js";
import { decimalFlag } from "./number-flags.js";
import { tellUser } from "./signals.js";
import { DEFAULT_STOP_TIMEOUT_S, stopWithin, type StopOutcome } from "../app/stop.js";

/** Adds `--stop-timeout SECONDS` to a long-running command. */
export function addStopTimeoutOption(command: Command): Command {
  return command.option(
    "--stop-timeout <seconds>",
    "on SIGTERM/Ctrl-C, how long to wait for submits in flight to be recorded and leases released before exiting anyway",
    String(DEFAULT_STOP_TIMEOUT_S),
  );
}

/**
 * The longest stop timeout: a day. A timer holds at most 2^31 - 1 ms (about 24.8 days), and a longer one
 * fires at once, which would end every stop as timed out; no stop needs to wait anywhere near a day.
 */
const LONGEST_STOP_S = 86_400;

/** The `--stop-timeout` value in milliseconds (at least 1), or an InputError naming the flag. */
export function stopTimeoutMs(value: string): number {
  return Math.round(decimalFlag("--stop-timeout", value, { min: 0.001, max: LONGEST_STOP_S, unit: "seconds", example: "20" }) * 1000);
}

/** One line for stderr saying what an unfinished stop leaves behind. */
export function unfinishedStopText(command: string, outcome: Exclude<StopOutcome, { kind: "stopped" }>, timeoutMs: number): string {
  const what = outcome.kind === "timed_out" ? `did not finish stopping within ${timeoutMs / 1000} s (the store is not answering)` : `could not release its leases (${outcome.message})`;
  return `mediagate ${command}: ${what}; exiting anyway: its leases expire and another engine resumes the jobs (a submit whose answer could not be recorded is logged above with its provider job id; the next engine resends it under the same idempotency key where the provider has one, and otherwise marks it unknown_submission)`;
}

/**
 * Stops a long-running command (`worker`, `serve`) within its stop timeout
 * and says how it went; exits 130 when the stop could not finish.
 */
export async function finishStop(command: string, stop: () => Promise<void>, timeoutMs: number): Promise<void> {
  const outcome = await stopWithin(stop, timeoutMs);
  if (outcome.kind === "stopped") {
    tellUser(`mediagate ${command}: stopped; leases released\n`);
    return;
  }
  tellUser(`${unfinishedStopText(command, outcome, timeoutMs)}\n`);
  process.exit(EXIT.interrupted);
}

/** What a second stop signal does to a long-running command: exit at once. */
export function exitAtOnce(command: string): () => void {
  return () => {
    tellUser(`mediagate ${command}: second signal, exiting now; leases expire and another engine resumes the jobs\n`);
    process.exit(EXIT.interrupted);
  };
}
