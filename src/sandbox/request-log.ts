export interface LoggedRequest {
  /** Virtual time of arrival. */
  at: number;
  /** Real time of arrival (benchmarks measure real windows). */
  realAt: number;
  method: string;
  /** Path and query as received. */
  url: string;
  /** The emulated provider, taken from the first path segment (`/d/...` → `d`), or null for sandbox routes. */
  provider: string | null;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON object body, when the request had one (raw and multipart bodies are not kept). */
  body?: Record<string, unknown>;
  statusCode?: number;
  /**
   * The fault injected into this request, if one was. A `drop` leaves no status code; `drop_after_handling` keeps the one it
   * was handled with; `delay_answer` sets it when the held answer is released.
   */
  fault?: "status" | "delay" | "drop" | "drop_after_handling" | "delay_answer";
}

/** Which logged requests `GET /_sandbox/requests` and the library's `requests()` return. */
export interface RequestFilter {
  /** Only this provider's (`d` includes D's `/d-poll` and `/d-results`). */
  provider?: string;
  /** Only those that arrived at or after this virtual time (ms). */
  since?: number;
  /** Only the last this many (after the other filters). */
  limit?: number;
}

/** Every request the sandbox received, so tests assert on what arrived ("none was submitted twice"). */
export class RequestLog {
  private readonly entries: LoggedRequest[] = [];

  record(entry: LoggedRequest): LoggedRequest {
    this.entries.push(entry);
    return entry;
  }

  all(): readonly LoggedRequest[] {
    return this.entries;
  }

  filter(predicate: (entry: LoggedRequest) => boolean): LoggedRequest[] {
    return this.entries.filter(predicate);
  }

  query(filter: RequestFilter): LoggedRequest[] {
    const matching = this.entries.filter(
      (entry) => (filter.provider === undefined || entry.provider === filter.provider) && (filter.since === undefined || entry.at >= filter.since),
    );
    return filter.limit === undefined ? matching : matching.slice(Math.max(0, matching.length - filter.limit));
  }

  count(predicate: (entry: LoggedRequest) => boolean): number {
    let n = 0;
    for (const entry of this.entries) if (predicate(entry)) n++;
    return n;
  }

  clear(): void {
    this.entries.length = 0;
  }
}
