import type { Job, JobEvent } from "./job.js";
import type { JobTrace } from "./trace-context.js";

/** A job that is traced: its provider, its ids, and where its span is. */
export type TracedJob = Pick<Job, "id" | "provider"> & { trace: JobTrace };

/** What a provider request of a job was made for: the child span's name says it. */
export type ProviderStep = "submit" | "poll" | "download" | "cancel" | "settle";

/** One provider request's span, started as the request leaves: `end` once its answer (or failure) is in. */
export interface RequestSpan {
  end(outcome: { status: number } | { error: unknown }): void;
}

/** What ends a job span: the job at its end, its event log, and what it made (image or video), when known. */
export interface JobEnd {
  job: Job & { trace: JobTrace };
  events: readonly JobEvent[];
  outputType: "image" | "video" | null;
}

/**
 * A job's trace as the engine, the server and the application write it
 * (issue 37, part 3). Implemented over the OpenTelemetry SDK in
 * `src/telemetry/otel.ts`, loaded only when an OTLP endpoint is configured;
 * without one no tracer exists, and every caller skips tracing on a null.
 * Nothing here may throw into the caller: a trace is never worth a job.
 */
export interface JobTracer {
  /** A child span of the job's span for one HTTP request to its provider; `url` is recorded without its query string. */
  providerRequest(job: TracedJob, step: ProviderStep, method: string, url: string): RequestSpan;
  /** A child span of the job's span for a provider's webhook delivery about it, received from `startedAt` until answered. */
  webhookReceived(job: TracedJob, delivery: { method: string; host: string | null; path: string; status: number; outcome: string; startedAt: number; endedAt: number }): void;
  /** Emits the job span, from its admission to its end, under the ids stored with the job. */
  jobEnded(end: JobEnd): void;
  /** Exports every span ended so far. */
  flush(): Promise<void>;
  /** Exports what is left and stops. */
  shutdown(): Promise<void>;
}
