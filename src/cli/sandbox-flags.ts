import { readFileSync } from "node:fs";
import { ConfigError, InputError } from "../core/errors.js";
import { checkJsonText } from "../core/json-text.js";
import type { FaultSpec } from "../sandbox/fault-spec.js";
import { decimalFlag, PORTS, wholeNumberFlag } from "./number-flags.js";
import type { DurationMs, PerProvider, SandboxKnobs } from "../sandbox/knobs.js";
import type { SandboxProviderId, StartSandboxOptions } from "../sandbox/index.js";

/**
 * The syntax of `mediagate sandbox`'s flags. A per-provider flag takes one
 * value for every provider that has the knob (`--render-ms 500`) or values
 * by provider (`--render-ms d=500,a=1000-3000`); a duration is whole virtual
 * milliseconds or a range `MIN-MAX` each task draws from. Limits (`--slots`,
 * `--rate`, `--credits`) always name their providers: their unit and meaning
 * differ by provider.
 */
export interface SandboxFlags {
  port: string;
  timeScale: string;
  seed: string;
  providers?: string;
  renderMs?: string;
  queueMs?: string;
  slots?: string;
  rate?: string;
  credits?: string;
  faults?: string;
  webhookTimestamps: string;
}

/** The flag behind each library option, so the library's errors name what the user typed. */
const FLAG_OF: Record<string, string> = {
  port: "--port",
  timeScale: "--time-scale",
  seed: "--seed",
  providers: "--providers",
  renderMs: "--render-ms",
  queueMs: "--queue-ms",
  slots: "--slots",
  ratePerMinute: "--rate",
  credits: "--credits",
  faults: "--faults",
  webhookTimestamps: "--webhook-timestamps",
};

const PROVIDER = /^[a-f]$/;
const WHOLE = /^\d+$/;

function wholeNumber(text: string, flag: string, what: string): number {
  const value = Number(text);
  if (!WHOLE.test(text) || !Number.isSafeInteger(value)) throw new InputError(flag, `"${text}" is not ${what}`, `${what}, e.g. 500`);
  return value;
}

function duration(text: string, flag: string): DurationMs {
  const range = /^(\d+)-(\d+)$/.exec(text);
  if (!range) return wholeNumber(text, flag, "whole milliseconds or a range MIN-MAX");
  const minMs = wholeNumber(range[1]!, flag, "whole milliseconds");
  const maxMs = wholeNumber(range[2]!, flag, "whole milliseconds");
  if (minMs > maxMs) throw new InputError(flag, `the range "${text}" runs backwards`, "MIN-MAX with MIN ≤ MAX, e.g. 2000-8000");
  return minMs === maxMs ? minMs : { minMs, maxMs };
}

/** `VALUE` (every provider) or `p=VALUE,p=VALUE`. */
function perProvider<T>(text: string, flag: string, value: (text: string) => T, example: string): T | PerProvider<T> {
  if (!text.includes("=")) return value(text);
  const byProvider: PerProvider<T> = {};
  for (const item of text.split(",")) {
    const [provider, given, ...rest] = item.split("=");
    if (given === undefined || rest.length > 0 || !PROVIDER.test(provider!)) {
      throw new InputError(flag, `"${item}" is not provider=value`, `provider=value pairs with providers a to f, separated by commas, e.g. ${example}`);
    }
    if (Object.hasOwn(byProvider, provider!)) throw new InputError(flag, `provider ${provider} is given twice`, `each provider once, e.g. ${example}`);
    byProvider[provider as SandboxProviderId] = value(given);
  }
  return byProvider;
}

/** A limit of one account: its provider must be named. */
function namedPerProvider(text: string, flag: string, what: string, example: string): PerProvider<number> {
  if (!text.includes("=")) throw new InputError(flag, `"${text}" names no provider, and each provider's ${what} differs`, `provider=value pairs, e.g. ${example}`);
  return perProvider(text, flag, (given) => wholeNumber(given, flag, "a whole number"), example) as PerProvider<number>;
}

function faultSpec(text: string): FaultSpec {
  let json = text;
  if (text.startsWith("@")) {
    try {
      json = readFileSync(text.slice(1), "utf8");
    } catch (error) {
      throw new InputError("--faults", `cannot read ${text.slice(1)} (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`, "inline JSON, or @FILE naming a readable JSON file");
    }
  }
  checkJsonText(json, "--faults");
  try {
    return JSON.parse(json) as FaultSpec;
  } catch {
    throw new InputError("--faults", `${text.startsWith("@") ? text.slice(1) : "the value"} is not valid JSON`, `a JSON object such as {"d": {"status5xx": 0.05}}, or @FILE`);
  }
}

/** The library options the flags stand for; values the library checks further (providers that lack a knob, fault settings). */
export function sandboxOptionsOf(flags: SandboxFlags): StartSandboxOptions {
  const port = wholeNumberFlag("--port", flags.port, PORTS);
  const timeScale = decimalFlag("--time-scale", flags.timeScale, { example: "60 or 0.5" });
  const seed = wholeNumberFlag("--seed", flags.seed, { min: -Number.MAX_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER });
  if (flags.webhookTimestamps !== "real" && flags.webhookTimestamps !== "virtual") {
    throw new InputError("--webhook-timestamps", `"${flags.webhookTimestamps}" is not a clock`, "real or virtual");
  }
  const options: StartSandboxOptions = { port, timeScale, seed, webhookTimestamps: flags.webhookTimestamps };
  if (flags.providers !== undefined) {
    const providers = flags.providers.split(",").map((provider) => provider.trim().toLowerCase());
    for (const provider of providers) {
      if (!PROVIDER.test(provider)) throw new InputError("--providers", `"${provider}" is not a provider`, "a comma-separated list of a, b, c, d, e, f");
    }
    options.providers = providers as SandboxProviderId[];
  }
  const knobs: SandboxKnobs = {};
  if (flags.renderMs !== undefined) knobs.renderMs = perProvider(flags.renderMs, "--render-ms", (given) => duration(given, "--render-ms"), "d=500,a=1000-3000");
  if (flags.queueMs !== undefined) knobs.queueMs = perProvider(flags.queueMs, "--queue-ms", (given) => duration(given, "--queue-ms"), "a=0,b=200");
  if (flags.slots !== undefined) knobs.slots = namedPerProvider(flags.slots, "--slots", "concurrency cap", "b=4,c=15,d=8");
  if (flags.rate !== undefined) knobs.ratePerMinute = namedPerProvider(flags.rate, "--rate", "rate limit", "a=60,e=4");
  if (flags.credits !== undefined) knobs.credits = namedPerProvider(flags.credits, "--credits", "balance unit", "b=5000000,c=100,d=500");
  if (flags.faults !== undefined) options.faults = faultSpec(flags.faults);
  return { ...options, ...knobs };
}

/** The library's error, naming the flag instead of the option (a port in use: "--port: port 8787 … is already in use"). */
export function asFlagError(error: unknown): unknown {
  if (error instanceof InputError && FLAG_OF[error.field]) return new InputError(FLAG_OF[error.field]!, error.reason, error.allowed);
  if (error instanceof ConfigError && FLAG_OF[error.variable]) {
    const flag = FLAG_OF[error.variable]!;
    return new ConfigError(flag, `${flag}: ${error.message}`, error.code);
  }
  return error;
}
