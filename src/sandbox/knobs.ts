import { InputError } from "../core/errors.js";
import { MAX_MICRO_USD, MICRO_USD_ALLOWED } from "../core/money.js";
import type { AllEmulatorOptions } from "./all.js";
import { C_TIER_SLOTS, type CTier } from "./c/options.js";
import type { SandboxProviderId } from "./context.js";
import { MICRO_USD_PER_CREDIT } from "./d/pricing.js";

/** Virtual milliseconds: a fixed value, or a range each task draws from uniformly (with the sandbox's seeded randomness). */
export type DurationMs = number | { minMs: number; maxMs: number };
export type PerProvider<T> = Partial<Record<SandboxProviderId, T>>;

/** The sandbox's knobs, mapped onto each emulator's own options. */
export interface SandboxKnobs {
  /** How long a task runs before it ends: one value for every started provider, or per provider. */
  renderMs?: DurationMs | PerProvider<DurationMs>;
  /** How long a task stays queued before it runs, for the providers that show a queued state (A, B): one value for both, or per provider. */
  queueMs?: DurationMs | PerProvider<DurationMs>;
  /** Tasks at once per key: B and D any number, C by its tier (3, 15, 20 or 25). */
  slots?: PerProvider<number>;
  /** Requests per minute per key: A every request, B submits, E every request of the organisation. */
  ratePerMinute?: PerProvider<number>;
  /** The account's starting balance: B in micro-USD, C in credits, D in credits (1 credit = 0.01 USD). */
  credits?: PerProvider<number>;
}

export type KnobName = keyof SandboxKnobs;

/** What a knob does to one emulator: its options, and the variables that tell mediagate the same. */
interface Applied<Options> {
  options: Options;
  environment?: Record<string, string>;
}

/** One provider's knobs; a knob it lacks is absent. `field` names the knob in errors. */
interface ProviderKnobs<Options> {
  renderMs(duration: DurationMs): Applied<Options>;
  queueMs?(duration: DurationMs, field: string): Applied<Options>;
  slots?(slots: number, field: string): Applied<Options>;
  ratePerMinute?(perMinute: number): Applied<Options>;
  credits?(credits: number, field: string): Applied<Options>;
}

/** What each knob is called when a provider lacks it. */
const CONCEPT: Record<KnobName, string> = {
  renderMs: "render time",
  queueMs: "queued state",
  slots: "concurrency cap",
  ratePerMinute: "rate limit",
  credits: "account balance",
};

/** The highest value MEDIAGATE_B_CONCURRENCY and MEDIAGATE_D_CONCURRENCY take, so the printed environment is always usable. */
const MAX_SLOTS = 10_000;
const MAX_RATE_PER_MINUTE = 1_000_000;

function minMax(duration: DurationMs): number | { min: number; max: number } {
  return typeof duration === "number" ? duration : { min: duration.minMs, max: duration.maxMs };
}

const KNOBS: { [P in SandboxProviderId]: ProviderKnobs<NonNullable<AllEmulatorOptions[P]>> } = {
  a: {
    renderMs: (duration) => ({ options: { renderMs: minMax(duration) } }),
    queueMs: (duration) => ({ options: { queueMs: minMax(duration) } }),
    // Both plans: whichever key a test uses gets the limit it asked for.
    ratePerMinute: (perMinute) => ({ options: { standardRequestsPerMinute: perMinute, enterpriseRequestsPerMinute: perMinute } }),
  },
  b: {
    renderMs: (duration) => ({ options: { renderTimeMs: duration } }),
    queueMs(duration, field) {
      if (typeof duration !== "number") throw new InputError(field, "B's queued state lasts one fixed time, not a range", "one whole number of milliseconds for b");
      return { options: { queueTimeMs: duration } };
    },
    slots: (slots) => ({ options: { concurrencyLimit: slots }, environment: { MEDIAGATE_B_CONCURRENCY: String(slots) } }),
    ratePerMinute: (perMinute) => ({ options: { submitsPerMinute: perMinute } }),
    credits(microUsd, field) {
      // A balance in dollars is held to mediagate's one range of money, as a budget is.
      if (microUsd > MAX_MICRO_USD) throw new InputError(field, `${microUsd} micro-USD for b is more than ${MAX_MICRO_USD} ($${MAX_MICRO_USD / 1_000_000})`, `${MICRO_USD_ALLOWED} for b`);
      return { options: { balanceMicroUsd: microUsd } };
    },
  },
  c: {
    renderMs: (duration) => ({ options: { renderMs: minMax(duration) } }),
    slots(slots, field) {
      // spec C Limits: the cap is the tier's and nothing else changes it, so a slot count names a tier.
      const tier = (Object.keys(C_TIER_SLOTS) as CTier[]).find((each) => C_TIER_SLOTS[each] === slots);
      if (!tier) throw new InputError(field, `C's slots come from its tier, and no tier has ${slots}`, "3 (free), 15 (essential), 20 (scale) or 25 (business) for c");
      return { options: { tier }, environment: { MEDIAGATE_C_TIER: tier } };
    },
    credits: (credits) => ({ options: { balanceCredits: credits } }),
  },
  d: {
    renderMs: (duration) => ({ options: { renderTimeMs: duration } }),
    slots: (slots) => ({ options: { concurrencyLimit: slots }, environment: { MEDIAGATE_D_CONCURRENCY: String(slots) } }),
    credits(credits, field) {
      const microUsd = credits * MICRO_USD_PER_CREDIT;
      if (microUsd > MAX_MICRO_USD) throw new InputError(field, `${credits} credits for d is more than $${MAX_MICRO_USD / 1_000_000}`, `at most ${MAX_MICRO_USD / MICRO_USD_PER_CREDIT} credits for d`);
      return { options: { balanceMicroUsd: microUsd } };
    },
  },
  e: {
    renderMs: (duration) => ({ options: { renderMs: minMax(duration) } }),
    ratePerMinute: (perMinute) => ({ options: { requestsPerMinute: perMinute } }),
  },
  f: {
    renderMs: (duration) => ({ options: { renderMs: minMax(duration) } }),
  },
};

/** The providers that have a knob, for "allowed" in errors and for documentation. */
export function providersWith(knob: KnobName): SandboxProviderId[] {
  return (Object.keys(KNOBS) as SandboxProviderId[]).filter((provider) => KNOBS[provider][knob] !== undefined);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function checkDuration(value: unknown, field: string, provider: string): DurationMs {
  const whole = (ms: unknown) => typeof ms === "number" && Number.isSafeInteger(ms) && ms >= 0;
  const allowed = "whole milliseconds ≥ 0, or a range with minMs ≤ maxMs";
  if (whole(value)) return value as number;
  if (isObject(value) && whole(value.minMs) && whole(value.maxMs) && (value.minMs as number) <= (value.maxMs as number)) {
    return { minMs: value.minMs as number, maxMs: value.maxMs as number };
  }
  throw new InputError(field, `${JSON.stringify(value)} for ${provider} is not a duration`, allowed);
}

function checkWhole(value: unknown, field: string, provider: string, min: number, max: number): number {
  if (typeof value === "number" && Number.isSafeInteger(value) && value >= min && value <= max) return value;
  throw new InputError(field, `${JSON.stringify(value)} for ${provider} is not a whole number from ${min} to ${max}`, `a whole number from ${min} to ${max}`);
}

const CHECKS: { [K in KnobName]: (value: unknown, field: string, provider: string) => DurationMs | number } = {
  renderMs: checkDuration,
  queueMs: checkDuration,
  slots: (value, field, provider) => checkWhole(value, field, provider, 1, MAX_SLOTS),
  ratePerMinute: (value, field, provider) => checkWhole(value, field, provider, 1, MAX_RATE_PER_MINUTE),
  credits: (value, field, provider) => checkWhole(value, field, provider, 0, Number.MAX_SAFE_INTEGER),
};

/** Knobs that take one value for every provider that has them; the others are limits of one account and must name it. */
const SHARED_VALUE: ReadonlySet<KnobName> = new Set(["renderMs", "queueMs"]);

/** Each started provider's value of a knob, refusing providers that are not started or lack it. */
function valuesByProvider(knob: KnobName, given: unknown, started: readonly SandboxProviderId[]): [SandboxProviderId, DurationMs | number][] {
  const withKnob = providersWith(knob);
  const sharedValue = typeof given === "number" || (isObject(given) && "minMs" in given);
  if (sharedValue) {
    if (!SHARED_VALUE.has(knob)) throw new InputError(knob, "each provider's value must be named, as its unit and meaning differ", `e.g. {"${withKnob[0]}": …} for ${withKnob.join(", ")}`);
    const targets = started.filter((provider) => withKnob.includes(provider));
    if (targets.length === 0) throw new InputError(knob, `none of the started providers (${started.join(", ")}) has a ${CONCEPT[knob]}`, `providers ${withKnob.join(", ")}`);
    const value = CHECKS[knob](given, knob, "every provider");
    return targets.map((provider) => [provider, value]);
  }
  if (!isObject(given)) throw new InputError(knob, `${JSON.stringify(given)} is neither a value nor values by provider`, `e.g. {"${withKnob[0]}": …}`);
  return Object.entries(given).map(([provider, value]) => {
    if (!/^[a-f]$/.test(provider)) throw new InputError(knob, `"${provider}" is not a provider`, "a, b, c, d, e or f");
    if (!withKnob.includes(provider as SandboxProviderId)) {
      throw new InputError(knob, `provider ${provider} has no ${CONCEPT[knob]} the sandbox can set`, `providers ${withKnob.join(", ")}`);
    }
    if (!started.includes(provider as SandboxProviderId)) throw new InputError(knob, `provider ${provider} is not started`, `the started providers: ${started.join(", ")}`);
    return [provider as SandboxProviderId, CHECKS[knob](value, knob, provider)];
  });
}

/**
 * Every emulator's options from the knobs, and the variables that tell
 * mediagate about the same limits. Throws an InputError naming the knob
 * (`renderMs`, `slots`, …) for a bad value, a provider that is not started,
 * one that has no such concept, or one of `madeByCaller` (an emulator object
 * the caller created, which the sandbox does not configure).
 */
export function emulatorOptionsOf(
  knobs: SandboxKnobs,
  started: readonly SandboxProviderId[],
  madeByCaller: readonly SandboxProviderId[] = [],
): { options: AllEmulatorOptions; environment: Record<string, string> } {
  const options: AllEmulatorOptions = {};
  const environment: Record<string, string> = {};
  const apply = <P extends SandboxProviderId>(provider: P, knob: KnobName, value: DurationMs | number) => {
    if (madeByCaller.includes(provider)) {
      throw new InputError(knob, `provider ${provider} is given as an emulator object, which the sandbox does not configure`, `the option on that object, or its options instead of the object in emulators.${provider}`);
    }
    const appliers = KNOBS[provider] as ProviderKnobs<NonNullable<AllEmulatorOptions[P]>>;
    const applier = appliers[knob] as ((value: DurationMs | number, field: string) => Applied<NonNullable<AllEmulatorOptions[P]>>) | undefined;
    const applied = applier!(value, knob);
    options[provider] = { ...options[provider], ...applied.options };
    Object.assign(environment, applied.environment);
  };
  for (const knob of Object.keys(CONCEPT) as KnobName[]) {
    const given = knobs[knob];
    if (given === undefined) continue;
    for (const [provider, value] of valuesByProvider(knob, given, started)) apply(provider, knob, value);
  }
  return { options, environment };
}
