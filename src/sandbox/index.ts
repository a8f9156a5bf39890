/**
 * `mediagate/sandbox`: the emulated providers as a test fixture. The same
 * function runs `mediagate sandbox`; README.md here documents both.
 */
import type { Clock } from "../core/clock.js";
import { InputError } from "../core/errors.js";
import { createEmulators, SANDBOX_PROVIDERS, sandboxEnvironment, type AllEmulatorOptions, type AllEmulators } from "./all.js";
import type { ProviderEmulator, SandboxProviderId } from "./context.js";
import { faultRulesOf, type FaultSpec } from "./fault-spec.js";
import { checkFaultRule, type FaultRule } from "./faults.js";
import { emulatorOptionsOf, type PerProvider, type SandboxKnobs } from "./knobs.js";
import type { LoggedRequest, RequestFilter } from "./request-log.js";
import { startSandboxServer } from "./server.js";
import type { SandboxStats } from "./stats.js";

export type { Clock, SleepOptions } from "../core/clock.js";
export type { AllEmulatorOptions, AllEmulators } from "./all.js";
export type { EmulatorStats, SandboxProviderId } from "./context.js";
export type { FaultSpec, ProviderFaults } from "./fault-spec.js";
export type { FaultKind, FaultRule } from "./faults.js";
export type { DurationMs, PerProvider, SandboxKnobs } from "./knobs.js";
export type { LoggedRequest, RequestFilter } from "./request-log.js";
export type { ProviderStats, SandboxStats } from "./stats.js";
// The emulators' own factories and options, for `emulators` (the knobs the flat options do not cover).
export { createAEmulator, type AEmulator, type AEmulatorOptions } from "./a/index.js";
export { createBEmulator, type BEmulator, type BEmulatorOptions } from "./b/index.js";
export { createCEmulator, type CEmulator, type CEmulatorOptions } from "./c/index.js";
export { createDEmulator, type DEmulator, type DEmulatorOptions } from "./d/index.js";
export { createEEmulator, type EEmulator, type EEmulatorOptions } from "./e/index.js";
export { createFEmulator, type FEmulator, type FEmulatorOptions } from "./f/index.js";

export type WebhookTimestamps = "real" | "virtual";

export interface StartSandboxOptions extends SandboxKnobs {
  /** Port on 127.0.0.1 (default 0: a free one). */
  port?: number;
  /** Which providers to start (default all six). */
  providers?: readonly SandboxProviderId[];
  /** Virtual time runs this many times faster than real time (default 1). */
  timeScale?: number;
  /** Seed of every random draw (render times, outcomes, fault probabilities); default 1. */
  seed?: number;
  /**
   * Clock of B's `webhook-timestamp` and F's `X-Img-Webhook-Timestamp`
   * (default "real"): a receiver checks them against its own wall clock, so
   * under a time scale or after `advance` virtual stamps would look too old
   * or too new to it. "virtual" matches every other time the sandbox reports.
   */
  webhookTimestamps?: WebhookTimestamps;
  /** Faults in force from the start, and again after each `reset` (the vocabulary of `injectFault`). */
  faults?: FaultSpec;
  /**
   * Advanced, per started provider: the emulator's own options, for the knobs
   * the flat options do not cover (D's unknown statuses, C's accounts, …),
   * applied over what the flat options set; or an emulator object made with
   * its `create…Emulator`, used as it is (no flat option may then reach that
   * provider, and neither may `webhookTimestamps` reach B or F). B's and F's
   * webhook timestamp clock is `webhookTimestamps`, not an emulator option.
   */
  emulators?: EmulatorSetups;
}

/** One provider's entry in `emulators`: its emulator's options, or an emulator object. */
export type EmulatorSetup<P extends SandboxProviderId> = NonNullable<AllEmulatorOptions[P]> | AllEmulators[P];
export type EmulatorSetups = { [P in SandboxProviderId]?: EmulatorSetup<P> };

/** The sandbox's virtual clock, to hand to code that takes a `Clock` (mediagate's engine, runtime, adapters). */
export interface SandboxClock extends Clock {
  /** Virtual time runs this many times faster than real time. */
  readonly scale: number;
  /** The same as the sandbox's `advance`. */
  advance(ms: number): number;
}

export interface Sandbox {
  /** `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly port: number;
  readonly providers: readonly SandboxProviderId[];
  /** Each started provider's client base URL (`{url}/d`, …). */
  readonly baseUrls: PerProvider<string>;
  /** The variables that point mediagate at this sandbox (what `mediagate sandbox` prints). */
  readonly environment: Readonly<Record<string, string>>;
  readonly timeScale: number;
  readonly seed: number;
  /** The clock B and F sign webhook timestamps with (an emulator object given for B or F keeps its own setting). */
  readonly webhookTimestamps: WebhookTimestamps;
  /** The emulators, for what the endpoints do not reach (B's webhook faults, D's unknown statuses, …). */
  readonly emulators: Partial<AllEmulators>;
  /** Virtual time: every rule about time in the sandbox reads it. `sleep` waits virtual ms (real ms ÷ `timeScale`). */
  readonly clock: SandboxClock;
  /** Virtual time now, ms since the epoch. */
  now(): number;
  /** The request log, oldest first (`GET /_sandbox/requests`). */
  requests(filter?: RequestFilter): LoggedRequest[];
  /** Per provider: tasks by state, peak concurrency, limit refusals, 429s, credits left (`GET /_sandbox/stats`). */
  stats(): SandboxStats;
  /**
   * Back to the start state (`POST /_sandbox/reset`): tasks, requests, peaks,
   * balances and faults added since are forgotten, the start's faults are in
   * force again, and the random draws start over from the seed. Virtual time
   * keeps its place.
   */
  reset(): Promise<void>;
  /** Moves virtual time forward by `ms`; returns the virtual time now (`POST /_sandbox/advance?ms=`). */
  advance(ms: number): number;
  /**
   * Adds faults: a spec in the JSON vocabulary (`POST /_sandbox/faults`), or
   * one `FaultRule` for what the vocabulary does not say (any status, body
   * and headers; a path RegExp on any route; a connection cut after the
   * request was handled; an answer held after it). Returns how many rules
   * were added. Rules are tried in the order added; the first that matches
   * and fires applies.
   */
  injectFault(spec: FaultSpec | FaultRule): number;
  /** Removes every fault (`DELETE /_sandbox/faults`). */
  clearFaults(): void;
  /**
   * A whole-host outage: stops listening and cuts every open connection (a
   * request in flight sees its connection reset, a new one is refused),
   * until `endOutage`. The emulators' state is kept, as a provider's would be.
   */
  startOutage(): Promise<void>;
  /** Listens again on the same port. */
  endOutage(): Promise<void>;
  /** Stops the emulators' timers (webhook retries, …), cuts every connection and stops listening (during an outage too). */
  stop(): Promise<void>;
}

function isFaultRule(spec: FaultSpec | FaultRule): spec is FaultRule {
  return typeof spec === "object" && spec !== null && "fault" in spec;
}

function isEmulatorObject(setup: object): setup is ProviderEmulator {
  return typeof (setup as Partial<ProviderEmulator>).register === "function";
}

/** The emulator objects given, and the emulator options, of the `emulators` option. */
function checkEmulatorSetups(setups: EmulatorSetups, providers: readonly SandboxProviderId[]): { objects: Partial<AllEmulators>; options: AllEmulatorOptions } {
  const objects: Partial<AllEmulators> = {};
  const options: AllEmulatorOptions = {};
  for (const [provider, setup] of Object.entries(setups) as [SandboxProviderId, object | undefined][]) {
    if (setup === undefined) continue;
    const field = `emulators.${provider}`;
    if (!SANDBOX_PROVIDERS.includes(provider)) throw new InputError("emulators", `"${provider}" is not a provider`, "a, b, c, d, e or f");
    if (!providers.includes(provider)) throw new InputError(field, `provider ${provider} is not started`, `the started providers: ${providers.join(", ")}`);
    if (typeof setup !== "object" || setup === null) throw new InputError(field, "is neither the emulator's options nor an emulator", `an object, e.g. {} or create${provider.toUpperCase()}Emulator({})`);
    if (isEmulatorObject(setup)) {
      if (setup.id !== provider) throw new InputError(field, `is provider ${setup.id}'s emulator`, `an emulator made by create${provider.toUpperCase()}Emulator`);
      (objects as Record<string, ProviderEmulator>)[provider] = setup;
      continue;
    }
    // The sandbox's own `webhookTimestamps` decides them, so what it reports is what B and F do.
    const timestampOption = provider === "b" ? "webhookTimestamps" : provider === "f" ? "webhookTimestampClock" : null;
    if (timestampOption !== null && timestampOption in setup) throw new InputError(`${field}.${timestampOption}`, "is set by the sandbox", "the sandbox's webhookTimestamps option");
    (options as Record<string, object>)[provider] = setup;
  }
  return { objects, options };
}

function checkProviders(providers: readonly unknown[]): SandboxProviderId[] {
  if (providers.length === 0) throw new InputError("providers", "no provider is named", "one or more of a, b, c, d, e, f");
  for (const provider of providers) {
    if (!SANDBOX_PROVIDERS.includes(provider as SandboxProviderId)) throw new InputError("providers", `${JSON.stringify(provider)} is not a provider`, "a, b, c, d, e, f");
  }
  return SANDBOX_PROVIDERS.filter((provider) => providers.includes(provider));
}

/**
 * The emulators to start, in a–f order: the caller's emulator objects as they
 * are, the others created with the flat options' knobs and then the caller's
 * emulator options; and the variables that tell mediagate about the knobs.
 */
function emulatorsOf(
  options: StartSandboxOptions,
  providers: readonly SandboxProviderId[],
  webhookTimestamps: WebhookTimestamps,
): { list: ProviderEmulator[]; byProvider: Partial<AllEmulators>; environment: Record<string, string> } {
  const setups = checkEmulatorSetups(options.emulators ?? {}, providers);
  const madeByCaller = providers.filter((provider) => setups.objects[provider] !== undefined);
  for (const provider of madeByCaller) {
    if (options.webhookTimestamps !== undefined && (provider === "b" || provider === "f")) {
      throw new InputError("webhookTimestamps", `provider ${provider} is given as an emulator object, which the sandbox does not configure`, "the option on that object");
    }
  }
  const knobs = emulatorOptionsOf(options, providers, madeByCaller);
  const emulatorOptions: AllEmulatorOptions = { ...knobs.options };
  for (const provider of providers) {
    const own = setups.options[provider];
    if (own !== undefined) (emulatorOptions as Record<string, object>)[provider] = { ...emulatorOptions[provider], ...own };
  }
  // Set on B and F explicitly, whatever their own defaults are: the receiver is outside the sandbox.
  emulatorOptions.b = { ...emulatorOptions.b, webhookTimestamps };
  emulatorOptions.f = { ...emulatorOptions.f, webhookTimestampClock: webhookTimestamps };
  const created = createEmulators(
    providers.filter((provider) => !madeByCaller.includes(provider)),
    emulatorOptions,
  );
  const list = providers.map((provider) => (setups.objects[provider] ?? created[provider]) as ProviderEmulator);
  const byProvider = Object.fromEntries(list.map((emulator) => [emulator.id, emulator])) as Partial<AllEmulators>;
  return { list, byProvider, environment: knobs.environment };
}

/**
 * Starts the emulated providers on one loopback port. Every bad option is an
 * InputError naming it, checked before anything listens; a port that is
 * taken is a ConfigError (`port_in_use`).
 */
export async function startSandbox(options: StartSandboxOptions = {}): Promise<Sandbox> {
  const providers = checkProviders(options.providers ?? SANDBOX_PROVIDERS);
  const port = options.port ?? 0;
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new InputError("port", `${port} is not a port`, "0 to 65535 (0 picks a free one)");
  const timeScale = options.timeScale ?? 1;
  if (!(timeScale > 0) || !Number.isFinite(timeScale)) throw new InputError("timeScale", `${timeScale} is not a positive number`, "a number > 0, e.g. 60");
  const seed = options.seed ?? 1;
  if (!Number.isSafeInteger(seed)) throw new InputError("seed", `${seed} is not a whole number`, "a whole number, e.g. 42");
  const webhookTimestamps = options.webhookTimestamps ?? "real";
  if (webhookTimestamps !== "real" && webhookTimestamps !== "virtual") throw new InputError("webhookTimestamps", `"${String(webhookTimestamps)}" is not a clock`, "real or virtual");

  const emulators = emulatorsOf(options, providers, webhookTimestamps);
  const faultRules = options.faults === undefined ? [] : faultRulesOf(options.faults, "faults", providers);
  const running = await startSandboxServer({ port, timeScale, seed, emulators: emulators.list, faults: faultRules });

  const baseUrls: PerProvider<string> = Object.fromEntries(providers.map((provider) => [provider, `${running.url}/${provider}`]));
  const environment = sandboxEnvironment(running.url, providers, emulators.environment);
  const clock: SandboxClock = {
    scale: timeScale,
    now: () => running.context.clock.now(),
    sleep: (ms, signal, sleepOptions) => running.context.clock.sleep(ms, signal, sleepOptions),
    advance: (ms) => running.controls.advance(ms),
  };
  return {
    url: running.url,
    port: running.port,
    providers,
    baseUrls,
    environment,
    timeScale,
    seed,
    webhookTimestamps,
    emulators: emulators.byProvider,
    clock,
    now: clock.now,
    requests: (filter = {}) => running.controls.requests(filter),
    stats: () => running.controls.stats(),
    reset: () => running.controls.reset(),
    advance: clock.advance,
    injectFault(spec) {
      if (!isFaultRule(spec)) return running.controls.addFaults(spec, "fault");
      running.context.faults.add(checkFaultRule(spec, "fault", providers));
      return 1;
    },
    clearFaults: () => running.controls.clearFaults(),
    startOutage: () => running.startOutage(),
    endOutage: () => running.endOutage(),
    stop: () => running.close(),
  };
}
