import type { FastifyInstance } from "fastify";
import type { ScaledClock } from "../core/clock.js";
import type { FaultInjector } from "./faults.js";
import type { RequestLog } from "./request-log.js";
import type { SignedUrls } from "./signed-url.js";

export type SandboxProviderId = "a" | "b" | "c" | "d" | "e" | "f";

/** What every emulator is given: shared virtual time, request log, fault injection and URL signing. */
export interface SandboxContext {
  /** Virtual time: every rule about time (render time, URL lifetime, expiry) reads this clock. */
  readonly clock: ScaledClock;
  readonly requests: RequestLog;
  readonly faults: FaultInjector;
  readonly signedUrls: SignedUrls;
  /** `http://127.0.0.1:PORT` once listening. */
  baseUrl(): string;
  /**
   * The same server under another host name (`http://localhost:PORT`), so an
   * emulator can hand back handles (D `polling_url`, E `statusUrl`) on a
   * different host than the one the client submitted to.
   */
  alternateBaseUrl(): string;
  /** Deterministic randomness for render times and injected behaviour (seeded). */
  random(): number;
}

/** What `GET /_sandbox/stats` reports of one emulator (the request counts come from the sandbox's request log). */
export interface EmulatorStats {
  /** Tasks that still exist, by the status a read would answer now, in the provider's own words (C's numeric status as a string). */
  tasks: Record<string, number>;
  /** The most tasks unfinished at one moment of virtual time, over every key (C: tasks holding a slot). */
  peakConcurrency: number;
  /** Requests refused for a slot, rate or quota limit, whatever HTTP status the provider gives them (C answers 500044 with HTTP 200). */
  limitRefusals: number;
  /** The account's balance now, in the provider's own unit; absent where the provider has no balance. */
  creditsLeft?: { amount: number; unit: "micro_usd" | "credits" };
}

/** One provider's emulator. It registers its routes under its own prefix (`/d`, ...) and any others it needs. */
export interface ProviderEmulator {
  readonly id: SandboxProviderId;
  register(app: FastifyInstance, context: SandboxContext): void | Promise<void>;
  /** Stops timers (webhook retries, ...) when the sandbox closes. */
  close?(): void | Promise<void>;
  /** Counts for `GET /_sandbox/stats`; only after `register`. */
  sandboxStats?(): EmulatorStats;
  /**
   * Back to the state just after `register` (`POST /_sandbox/reset`): tasks,
   * counters, peaks, balances, injected outcomes and webhook deliveries are
   * forgotten; the options it was created with, its keys and signing keys stay.
   */
  reset?(): void | Promise<void>;
}
