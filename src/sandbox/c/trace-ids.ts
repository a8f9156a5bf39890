import { C_ERR, CApiError } from "./envelope.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export interface CTraceIdReport {
  /** Requests that carried a valid trace id. */
  seen: number;
  /** Trace ids that arrived more than once (each listed once). */
  reused: string[];
}

/**
 * spec C Authentication: every call carries a per-request `Ai-trace-id`, "a
 * fresh unique identifier per request, UUID form". A missing or non-UUID one
 * is refused (400011); a reused one is accepted, since the spec states no
 * consequence, but recorded so tests can assert that the client never
 * reuses one.
 */
export class CTraceIds {
  private readonly seenIds = new Set<string>();
  private readonly reusedIds = new Set<string>();
  private seenCount = 0;

  check(header: string | string[] | undefined): string {
    const traceId = Array.isArray(header) ? header[0] : header;
    if (traceId === undefined || traceId.length === 0) {
      throw new CApiError(C_ERR.invalidTraceId, "Ai-trace-id header is required");
    }
    if (!UUID.test(traceId)) throw new CApiError(C_ERR.invalidTraceId, "Ai-trace-id must be a UUID");
    const normalised = traceId.toLowerCase();
    if (this.seenIds.has(normalised)) this.reusedIds.add(normalised);
    this.seenIds.add(normalised);
    this.seenCount += 1;
    return traceId;
  }

  report(): CTraceIdReport {
    return { seen: this.seenCount, reused: [...this.reusedIds] };
  }
}
