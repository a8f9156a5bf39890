/**
 * `mediagate/sandbox`: the emulated providers as a test fixture. The same
 * function runs `mediagate sandbox`; README.md here documents both.
 */
import { InputError } from "../core/errors.js";
import { createEmulators, SANDBOX_PROVIDERS, sandboxEnvironment, type AllEmulators } from "./all.js";
import type { SandboxProviderId } from "./context.js";
import { faultRulesOf, type FaultSpec } from "./fault-spec.js";
import { emulatorOptionsOf, type PerProvider, type SandboxKnobs } from "./knobs.js";
import type { LoggedRequest, RequestFilter } from "./request-log.js";
import { startSandbox as startSandboxServer } from "./server.js";
import type { SandboxStats } from "./stats.js";

export type { AllEmulators } from "./all.js";
export type { EmulatorStats, SandboxProviderId } from "./context.js";
export type { FaultSpec, ProviderFaults } from "./fault-spec.js";
export type { DurationMs, PerProvider, SandboxKnobs } from "./knobs.js";
export type { LoggedRequest, RequestFilter } from "./request-log.js";
export type { ProviderStats, SandboxStats } from "./stats.js";

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
  readonly webhookTimestamps: WebhookTimestamps;
  /** The emulators, for what the endpoints do not reach (B's webhook faults, D's unknown statuses, …). */
  readonly emulators: Partial<AllEmulators>;
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
  /** Adds faults (`POST /_sandbox/faults`); returns how many rules were added. */
  injectFault(spec: FaultSpec): number;
  /** Removes every fault (`DELETE /_sandbox/faults`). */
  clearFaults(): void;
  stop(): Promise<void>;
}

function checkProviders(providers: readonly unknown[]): SandboxProviderId[] {
  if (providers.length === 0) throw new InputError("providers", "no provider is named", "one or more of a, b, c, d, e, f");
  for (const provider of providers) {
    if (!SANDBOX_PROVIDERS.includes(provider as SandboxProviderId)) throw new InputError("providers", `${JSON.stringify(provider)} is not a provider`, "a, b, c, d, e, f");
  }
  return SANDBOX_PROVIDERS.filter((provider) => providers.includes(provider));
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

  const knobs = emulatorOptionsOf(options, providers);
  const faultRules = options.faults === undefined ? [] : faultRulesOf(options.faults, "faults", providers);
  // Set on B and F explicitly, whatever their own defaults are: the receiver is outside the sandbox.
  knobs.options.b = { ...knobs.options.b, webhookTimestamps };
  knobs.options.f = { ...knobs.options.f, webhookTimestampClock: webhookTimestamps };
  const emulators = createEmulators(providers, knobs.options);
  const { list, ...byProvider } = emulators;
  const running = await startSandboxServer({ port, timeScale, seed, emulators: list, faults: faultRules });

  const baseUrls: PerProvider<string> = Object.fromEntries(providers.map((provider) => [provider, `${running.url}/${provider}`]));
  const environment = sandboxEnvironment(running.url, providers, knobs.environment);
  return {
    url: running.url,
    port: running.port,
    providers,
    baseUrls,
    environment,
    timeScale,
    seed,
    webhookTimestamps,
    emulators: byProvider,
    now: () => running.context.clock.now(),
    requests: (filter = {}) => running.controls.requests(filter),
    stats: () => running.controls.stats(),
    reset: () => running.controls.reset(),
    advance: (ms) => running.controls.advance(ms),
    injectFault: (spec) => running.controls.addFaults(spec, "fault"),
    clearFaults: () => running.controls.clearFaults(),
    stop: () => running.close(),
  };
}
