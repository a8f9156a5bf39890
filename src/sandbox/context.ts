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

/** One provider's emulator. It registers its routes under its own prefix (`/d`, ...) and any others it needs. */
export interface ProviderEmulator {
  readonly id: SandboxProviderId;
  register(app: FastifyInstance, context: SandboxContext): void | Promise<void>;
  /** Stops timers (webhook retries, ...) when the sandbox closes. */
  close?(): void | Promise<void>;
}
