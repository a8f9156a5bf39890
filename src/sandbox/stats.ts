import type { ScaledClock } from "../core/clock.js";
import type { EmulatorStats, ProviderEmulator, SandboxProviderId } from "./context.js";
import type { RequestLog } from "./request-log.js";

/** One provider in `GET /_sandbox/stats`: the emulator's own counts, and what the request log saw. */
export interface ProviderStats extends EmulatorStats {
  /** Requests that reached the provider's routes, injected faults included. */
  requests: number;
  /** Answers sent with HTTP status 429: the emulator's own and injected ones. */
  responses429: number;
}

export interface SandboxStats {
  /** Virtual time now, ms since the epoch. */
  now: number;
  timeScale: number;
  providers: Partial<Record<SandboxProviderId, ProviderStats>>;
}

const NO_EMULATOR_STATS: EmulatorStats = { tasks: {}, peakConcurrency: 0, limitRefusals: 0 };

export function collectStats(emulators: readonly ProviderEmulator[], requests: RequestLog, clock: ScaledClock): SandboxStats {
  const providers: SandboxStats["providers"] = {};
  for (const emulator of emulators) {
    providers[emulator.id] = {
      ...(emulator.sandboxStats?.() ?? NO_EMULATOR_STATS),
      requests: requests.count((entry) => entry.provider === emulator.id),
      responses429: requests.count((entry) => entry.provider === emulator.id && entry.statusCode === 429),
    };
  }
  return { now: clock.now(), timeScale: clock.scale, providers };
}
