import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

/**
 * An OTLP/HTTP trace receiver for tests: a real `node:http` server on
 * loopback that takes `POST /v1/traces` (or any path: the test checks which)
 * in either encoding, decodes it (JSON as it is; protobuf with protobufjs
 * over OpenTelemetry's own .proto files in ./otlp-proto) and keeps every
 * span, flattened to one shape, with the request that carried it.
 */

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client. */
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, unknown>;
  events: Array<{ name: string; atMs: number; attributes: Record<string, unknown> }>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  resource: Record<string, unknown>;
}

export interface ReceivedExport {
  path: string;
  contentType: string;
  headers: IncomingHttpHeaders;
  spans: ReceivedSpan[];
}

const PROTO_ROOT = join(fileURLToPath(new URL(".", import.meta.url)), "otlp-proto");
let exportRequest: protobuf.Type | null = null;

function exportRequestType(): protobuf.Type {
  if (!exportRequest) {
    const root = new protobuf.Root();
    // The files import each other by their path under the repository's root.
    root.resolvePath = (_origin, target) => join(PROTO_ROOT, target);
    root.loadSync("opentelemetry/proto/collector/trace/v1/trace_service.proto", { keepCase: false });
    exportRequest = root.lookupType("opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest");
  }
  return exportRequest;
}

type AnyValue = { stringValue?: string; boolValue?: boolean; intValue?: unknown; doubleValue?: number; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value?: AnyValue };

function valueOf(value: AnyValue | undefined): unknown {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((entry) => [entry.key, valueOf(entry.value)]));
}

/** Nanoseconds since the epoch (a string, a number, or protobufjs' Long as text) in milliseconds. */
function msOf(nanos: unknown): number {
  return Number(BigInt(String(nanos ?? 0)) / 1_000_000n);
}

/** Ids as hex: OTLP/JSON writes them as hex already; protobuf's bytes come here as base64 (toObject, bytes: String). */
function hexOf(id: unknown, fromBase64: boolean): string {
  if (typeof id !== "string" || id === "") return "";
  return fromBase64 ? Buffer.from(id, "base64").toString("hex") : id.toLowerCase();
}

interface OtlpRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId?: string;
        spanId?: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        startTimeUnixNano?: unknown;
        endTimeUnixNano?: unknown;
        attributes?: KeyValue[];
        events?: Array<{ name: string; timeUnixNano?: unknown; attributes?: KeyValue[] }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
}

/** The spans of one export request, whichever its encoding. */
export function decodeExport(body: Buffer, contentType: string): ReceivedSpan[] {
  const protobufBody = contentType.includes("protobuf");
  const request: OtlpRequest = protobufBody
    ? (exportRequestType().toObject(exportRequestType().decode(body), { longs: String, enums: Number, bytes: String, defaults: false }) as OtlpRequest)
    : (JSON.parse(body.toString("utf8")) as OtlpRequest);
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          traceId: hexOf(span.traceId, protobufBody),
          spanId: hexOf(span.spanId, protobufBody),
          parentSpanId: hexOf(span.parentSpanId, protobufBody),
          name: span.name,
          kind: span.kind ?? 0,
          startMs: msOf(span.startTimeUnixNano),
          endMs: msOf(span.endTimeUnixNano),
          attributes: attributesOf(span.attributes),
          events: (span.events ?? []).map((event) => ({ name: event.name, atMs: msOf(event.timeUnixNano), attributes: attributesOf(event.attributes) })),
          statusCode: span.status?.code ?? 0,
          resource,
        });
      }
    }
  }
  return spans;
}

export interface OtlpReceiver {
  /** The base to set as OTEL_EXPORTER_OTLP_ENDPOINT (`http://127.0.0.1:PORT`). */
  endpoint: string;
  exports: ReceivedExport[];
  spans(): ReceivedSpan[];
  /** Resolves once the spans received so far satisfy `done` (checked now and at each export), rejecting after `timeoutMs`. */
  until(done: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: ReceivedExport[] = [];
  const waiters = new Set<() => void>();
  const spans = () => exports.flatMap((received) => received.spans);
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const contentType = String(request.headers["content-type"] ?? "");
      try {
        exports.push({ path: request.url ?? "", contentType, headers: request.headers, spans: decodeExport(Buffer.concat(chunks), contentType) });
        // OTLP/HTTP: a full success is 200 with an empty ExportTraceServiceResponse, in the request's encoding.
        response.writeHead(200, { "content-type": contentType.includes("protobuf") ? "application/x-protobuf" : "application/json" });
        response.end(contentType.includes("protobuf") ? Buffer.alloc(0) : "{}");
      } catch (error) {
        response.writeHead(400, { "content-type": "text/plain" });
        response.end(String(error));
      }
      for (const waiter of waiters) waiter();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exports,
    spans,
    until(done, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!done(spans())) return;
          finish();
          resolve(spans());
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`the spans expected did not arrive within ${timeoutMs} ms; received: ${spans().map((span) => span.name).join(", ") || "none"}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
