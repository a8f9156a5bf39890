import type { Clock } from "../core/clock.js";
import type { Job } from "../core/job.js";
import type { ProviderStep } from "../core/tracing.js";
import type { CallContext, ProviderAdapter, ProviderId, ProviderLimits, ProviderStatus, ValidatedRequest } from "../providers/adapter.js";
import type { OutputWriter } from "../outputs/local-folder.js";
import type { Store } from "../store/store.js";
import type { EngineLogger } from "./logger.js";
import type { PollScheduler } from "./polling.js";

/** Counters an engine keeps per provider (benchmarks and `/metrics` read them). */
export interface ProviderCounters {
  requests: number;
  /** Answers with HTTP 429. */
  status429: number;
  /** Submits pushed back for capacity (429, 500044, …). */
  backpressure: number;
  submits: number;
  polls: number;
  downloads: number;
  /** Queued jobs this engine claimed, and claims it lost because another engine took the job first. */
  claims: number;
  claimsLost: number;
}

/** One provider call of a step, timed on the engine's clock: the submit, a poll, one output's download (`/metrics`). */
export interface StepTiming {
  provider: ProviderId;
  step: "submit" | "poll" | "capture";
  /** "error": it threw (a refusal, a timeout, a lost connection); "ok": it answered. */
  outcome: "ok" | "error";
  ms: number;
}

/** What the engine's steps (submit, track, capture) share. */
export interface EngineContext {
  store: Store;
  clock: Clock;
  owner: string;
  leaseMs: number;
  log: EngineLogger;
  polls: PollScheduler;
  /** Where result bytes are written. */
  outputs: OutputWriter;
  adapter(provider: ProviderId): ProviderAdapter;
  /**
   * A call context whose HTTP layer takes rate tokens and counts requests for this job's provider. `step` names
   * what its requests are for in traces (default: `submit` for a job being submitted, else `poll`).
   */
  callContext(job: Job, request: ValidatedRequest, options?: { rateLimited?: boolean; step?: ProviderStep }): Promise<CallContext>;
  counters(provider: ProviderId): ProviderCounters;
  /** Runs one provider call of a step and reports how long it took (the engine's `step` event). */
  timed<T>(provider: ProviderId, step: StepTiming["step"], call: () => Promise<T>): Promise<T>;
  /** A routed job's target failing before accepting this long (an outage) hands the job to the next target. */
  fallbackAfterMs: number;
  /** Tells listeners (progress bars, the server) that a job changed. */
  emit(job: Job): void;
  /** Wakes the loop early (a slot was freed, a job was queued). */
  wake(): void;
  /** A provider was halted here: the loop reads the halts again at once instead of trusting its copy. */
  haltsChanged(): void;
  /** A status a verified webhook delivered for this job, used once instead of the next poll. */
  takeKnownStatus(jobId: string): ProviderStatus | undefined;
  signal: AbortSignal;
  /** Aborted as soon as the engine starts stopping: requests still waiting for a rate token give up (nothing was sent). */
  stopWaiting: AbortSignal;
  /**
   * True once a stop gave up waiting (a library `close()` past its timeout):
   * what still runs (a submit's answer being recorded) goes on trying while
   * the process lives, but its waits no longer keep the process alive.
   */
  givenUp(): boolean;
}

export function validatedOf(job: Job): ValidatedRequest {
  return {
    provider: job.provider,
    model: job.model,
    operation: job.operation,
    body: job.body,
    warnings: job.warnings,
    facts: job.facts,
  };
}

export function limitsOf(context: EngineContext, job: Job): ProviderLimits {
  return context.adapter(job.provider).limits(validatedOf(job));
}
