import { readFileSync } from "node:fs";
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Context } from "@opentelemetry/api";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, RandomIdGenerator, type IdGenerator, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from "@opentelemetry/semantic-conventions";
import { isTerminal } from "../core/job.js";
import type { JobTracer } from "../core/tracing.js";
import type { TraceSettings } from "./settings.js";
import { answerAttributes, JOB_SPAN, jobAttributes, requestAttributes, requestSpanName, STATE_EVENT, stateEvents, webhookAttributes } from "./spans.js";

/**
 * Ids for new spans: random, except for the one job span being emitted,
 * whose trace id and span id were chosen at the job's admission and stored
 * with it (the SDK takes a span's ids only from its IdGenerator). Span
 * creation is synchronous, so the ids set just before `startSpan` are the
 * ones it takes, and no other span can take them.
 */
class StoredIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  private next: { traceId: string; spanId: string } | null = null;

  generateTraceId(): string {
    return this.next?.traceId ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.next?.spanId ?? this.random.generateSpanId();
  }

  /** Runs `start` (a `startSpan`) with these ids for the span it makes. */
  with<T>(ids: { traceId: string; spanId: string }, start: () => T): T {
    this.next = ids;
    try {
      return start();
    } finally {
      this.next = null;
    }
  }
}

/** mediagate's version (`service.version`), from its package.json: two folders up from src/telemetry and dist/telemetry alike. */
function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
}

/** A stored span (the job's, or its caller's) as the parent of spans started here. */
function remoteParent(traceId: string, spanId: string): Context {
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true });
}

/**
 * The OTLP/HTTP exporter of the configured encoding: JSON, or protobuf (the
 * default). Loaded here, and this module is itself only imported when an
 * endpoint is configured (see `app/runtime.ts`), so a process without one
 * loads nothing of OpenTelemetry.
 */
async function exporterOf(settings: TraceSettings): Promise<SpanExporter> {
  const config = { url: settings.url, headers: settings.headers };
  if (settings.protocol === "http/json") return new (await import("@opentelemetry/exporter-trace-otlp-http")).OTLPTraceExporter(config);
  return new (await import("@opentelemetry/exporter-trace-otlp-proto")).OTLPTraceExporter(config);
}

/**
 * The job tracer over the OpenTelemetry SDK. The job span is the one span
 * that can start in one process and end in another (admitted by the API,
 * ended by a worker; resumed after a crash), so it is not held open: its ids
 * are stored with the job at admission, every process parents its child
 * spans (provider requests, webhooks) to those ids, and the process that
 * moves the job to its end emits the span whole, started at the admission,
 * with one event per change of state from the job's event log.
 */
export async function openOtelTracer(settings: TraceSettings): Promise<JobTracer> {
  const version = packageVersion();
  const ids = new StoredIds();
  const exporter = await exporterOf(settings);
  // OTEL_RESOURCE_ATTRIBUTES as the SDK reads it; OTEL_SERVICE_NAME (or mediagate) names the service over it.
  const resource = detectResources({ detectors: [envDetector] }).merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: version }));
  const provider = new BasicTracerProvider({ resource, idGenerator: ids, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer("mediagate", version);
  return {
    providerRequest(job, step, method, url) {
      const span = tracer.startSpan(requestSpanName(step), { kind: SpanKind.CLIENT, attributes: requestAttributes(job, step, method, url) }, remoteParent(job.trace.traceId, job.trace.spanId));
      let ended = false;
      return {
        end(outcome) {
          if (ended) return;
          ended = true;
          span.setAttributes(answerAttributes(outcome));
          if (!("status" in outcome) || outcome.status >= 400) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
    webhookReceived(job, delivery) {
      const span = tracer.startSpan("mediagate.webhook", { kind: SpanKind.SERVER, startTime: delivery.startedAt, attributes: webhookAttributes(job, delivery) }, remoteParent(job.trace.traceId, job.trace.spanId));
      if (delivery.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end(delivery.endedAt);
    },
    jobEnded(end) {
      const { job } = end;
      if (!isTerminal(job.state)) return;
      const parent = job.trace.parentSpanId ? remoteParent(job.trace.traceId, job.trace.parentSpanId) : ROOT_CONTEXT;
      const span = ids.with({ traceId: job.trace.traceId, spanId: job.trace.spanId }, () =>
        tracer.startSpan(JOB_SPAN, { kind: SpanKind.INTERNAL, startTime: job.createdAt, attributes: jobAttributes(end) }, parent),
      );
      for (const event of stateEvents(end.events)) span.addEvent(STATE_EVENT, event.attributes, event.at);
      // Only a failure is an error; a cancelled or expired job did what was asked of it.
      if (job.state === "failed" || job.state === "unknown_submission") span.setStatus({ code: SpanStatusCode.ERROR, message: job.error?.code ?? job.state });
      span.end(job.finishedAt ?? job.updatedAt);
    },
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
