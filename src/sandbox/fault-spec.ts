import { InputError } from "../core/errors.js";
import type { SandboxProviderId } from "./context.js";
import type { FaultRule } from "./faults.js";

/**
 * One provider's faults in the JSON vocabulary that `mediagate sandbox
 * --faults`, `POST /_sandbox/faults` and `injectFault` share. Each fault is
 * drawn per matching request, in this order, and the first that fires
 * applies: drop, status5xx, status429, delay.
 */
export interface ProviderFaults {
  /** Chance (0 to 1) that a request is answered 503 instead of being handled. */
  status5xx?: number;
  /** Chance (0 to 1) that a request is answered 429, with Retry-After, instead of being handled. */
  status429?: number;
  /** Retry-After of an injected 429, whole seconds (default 1). */
  retryAfterSeconds?: number;
  /** Chance (0 to 1) that the connection is cut without an answer. */
  drop?: number;
  /** Real milliseconds a request is held before it is handled (not scaled: it is network time). */
  delayMs?: number;
  /** Chance (0 to 1) that a request is held `delayMs` (default 1). */
  delayProbability?: number;
  /** Only requests with this method. */
  method?: string;
  /** Only requests whose path (without query) matches this regular expression, e.g. "^/d/v1/". */
  path?: string;
  /** At most this many requests get each of these faults (default: no limit). */
  times?: number;
}

/** Faults by provider; "*" stands for every started provider. A provider may have a list, for different methods or paths. */
export type FaultSpec = Partial<Record<SandboxProviderId | "*", ProviderFaults | ProviderFaults[]>>;

const FAULT_SETTINGS = ["status5xx", "status429", "retryAfterSeconds", "drop", "delayMs", "delayProbability", "method", "path", "times"] as const;
const PROVIDERS: readonly SandboxProviderId[] = ["a", "b", "c", "d", "e", "f"];
const EXAMPLE = `e.g. {"d": {"status5xx": 0.05}, "*": {"delayMs": 200}}`;
/** A held request longer than this is a mistake in the spec, not a test of patience. */
const MAX_DELAY_MS = 600_000;
/** spec-less choice: an injected 5xx is a 503, the status a briefly overloaded service answers. */
const INJECTED_5XX_STATUS = 503;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The fault rules a spec stands for, checked whole before any is returned.
 * `field` names the input in errors (`--faults`, `faults`, `body`); `started`
 * are the providers running, the only ones a spec may name.
 */
export function faultRulesOf(spec: unknown, field: string, started: readonly SandboxProviderId[]): FaultRule[] {
  if (!isObject(spec)) throw new InputError(field, "it is not a JSON object keyed by provider", EXAMPLE);
  const rules: FaultRule[] = [];
  for (const [key, entry] of Object.entries(spec)) {
    if (key !== "*" && !PROVIDERS.includes(key as SandboxProviderId)) throw new InputError(field, `"${key}" is not a provider`, `a, b, c, d, e, f or "*"`);
    if (key !== "*" && !started.includes(key as SandboxProviderId)) {
      throw new InputError(field, `provider ${key} is not started`, `the started providers: ${started.join(", ")}`);
    }
    const providers = key === "*" ? started : [key as SandboxProviderId];
    const entries = Array.isArray(entry) ? entry : [entry];
    entries.forEach((each, index) => {
      const path = Array.isArray(entry) ? `${key}[${index}]` : key;
      for (const provider of providers) rules.push(...providerRules(each, provider, path, field));
    });
  }
  return rules;
}

function providerRules(entry: unknown, provider: SandboxProviderId, path: string, field: string): FaultRule[] {
  if (!isObject(entry)) throw new InputError(field, `"${path}" is not an object of faults`, EXAMPLE);
  for (const name of Object.keys(entry)) {
    if (!(FAULT_SETTINGS as readonly string[]).includes(name)) throw new InputError(field, `"${path}.${name}" is not a fault setting`, FAULT_SETTINGS.join(", "));
  }
  const probability = (name: keyof ProviderFaults): number | undefined => {
    const value = entry[name];
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !(value >= 0 && value <= 1)) throw new InputError(field, `"${path}.${name}" is ${JSON.stringify(value)}, not a probability`, "a number from 0 to 1");
    return value;
  };
  const wholeNumber = (name: keyof ProviderFaults, min: number, max: number): number | undefined => {
    const value = entry[name];
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      throw new InputError(field, `"${path}.${name}" is ${JSON.stringify(value)}, not a whole number from ${min} to ${max}`, `a whole number from ${min} to ${max}`);
    }
    return value;
  };

  const status5xx = probability("status5xx");
  const status429 = probability("status429");
  const drop = probability("drop");
  const delayProbability = probability("delayProbability");
  const retryAfterSeconds = wholeNumber("retryAfterSeconds", 0, 86_400);
  const delayMs = wholeNumber("delayMs", 0, MAX_DELAY_MS);
  const times = wholeNumber("times", 1, Number.MAX_SAFE_INTEGER);
  if (status5xx === undefined && status429 === undefined && drop === undefined && delayMs === undefined) {
    throw new InputError(field, `"${path}" names no fault`, "at least one of status5xx, status429, drop, delayMs");
  }
  if (delayProbability !== undefined && delayMs === undefined) throw new InputError(field, `"${path}.delayProbability" is given without delayMs`, "delayProbability with delayMs");
  if (retryAfterSeconds !== undefined && status429 === undefined) throw new InputError(field, `"${path}.retryAfterSeconds" is given without status429`, "retryAfterSeconds with status429");

  const scope: Omit<FaultRule, "fault"> = { provider, ...(times !== undefined ? { times } : {}) };
  if (entry.method !== undefined) {
    if (typeof entry.method !== "string" || !/^[A-Za-z]+$/.test(entry.method)) throw new InputError(field, `"${path}.method" is not an HTTP method`, "GET, POST, PUT, DELETE, …");
    scope.method = entry.method.toUpperCase();
  }
  if (entry.path !== undefined) {
    if (typeof entry.path !== "string") throw new InputError(field, `"${path}.path" is not a string`, `a regular expression, e.g. "^/d/v1/"`);
    try {
      scope.path = new RegExp(entry.path);
    } catch {
      throw new InputError(field, `"${path}.path" is not a valid regular expression`, `a regular expression, e.g. "^/d/v1/"`);
    }
  }

  const rules: FaultRule[] = [];
  if (drop !== undefined) rules.push({ ...scope, probability: drop, fault: { kind: "drop" } });
  if (status5xx !== undefined) {
    rules.push({ ...scope, probability: status5xx, fault: { kind: "status", status: INJECTED_5XX_STATUS, body: { error: "injected fault: 503" } } });
  }
  if (status429 !== undefined) {
    const headers = { "retry-after": String(retryAfterSeconds ?? 1) };
    rules.push({ ...scope, probability: status429, fault: { kind: "status", status: 429, headers, body: { error: "injected fault: 429" } } });
  }
  if (delayMs !== undefined) rules.push({ ...scope, probability: delayProbability ?? 1, fault: { kind: "delay", ms: delayMs } });
  return rules;
}
