import { randomBytes } from "node:crypto";

/**
 * A job's place in a distributed trace (issue 37, part 3), stored with the job
 * at its admission (migration 22) so that any process that works on it later
 * continues the same trace: the job span's trace id and span id, and the span
 * it is a child of when the request that created it carried a `traceparent`.
 */
export interface JobTrace {
  /** 32 lower-case hex digits. */
  traceId: string;
  /** The job span's own id: 16 lower-case hex digits. */
  spanId: string;
  /** The span of the API request's caller (its `traceparent`), or null: the job span is a root. */
  parentSpanId: string | null;
}

/** A W3C trace context as a `traceparent` header carries it (https://www.w3.org/TR/trace-context/#traceparent-header). */
export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/**
 * Reads a `traceparent` header, or null when it is absent or not one. Per the
 * Trace Context spec an invalid header is ignored (a new trace is started),
 * never an error of the request: version ff and all-zero ids are invalid, and
 * a later version may append fields after the four known ones.
 */
export function parseTraceparent(header: string | null | undefined): TraceParent | null {
  if (typeof header !== "string") return null;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return null;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
  if (version === "ff" || (version === "00" && rest !== undefined)) return null;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return null;
  return { traceId, spanId, sampled: (Number.parseInt(flags, 16) & 1) === 1 };
}

/** The `traceparent` naming a job's span: what its notifications carry, so a receiver's spans join the job's trace. */
export function traceparentOf(trace: Pick<JobTrace, "traceId" | "spanId">): string {
  return `00-${trace.traceId}-${trace.spanId}-01`;
}

/**
 * The trace a job being admitted joins: the caller's trace when its request
 * carried a sampled `traceparent` (the job span becomes a child of the
 * caller's span), a new trace otherwise. A caller that said "not sampled" is
 * obeyed: the job is not traced (null).
 */
export function newJobTrace(incoming: TraceParent | null, random: (bytes: number) => Buffer = randomBytes): JobTrace | null {
  if (incoming && !incoming.sampled) return null;
  return {
    traceId: incoming?.traceId ?? nonZeroHex(random, 16),
    spanId: nonZeroHex(random, 8),
    parentSpanId: incoming?.spanId ?? null,
  };
}

function nonZeroHex(random: (bytes: number) => Buffer, bytes: number): string {
  for (;;) {
    const hex = random(bytes).toString("hex");
    if (!ALL_ZERO.test(hex)) return hex;
  }
}
