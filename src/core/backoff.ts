/**
 * Full-jitter exponential backoff: a uniformly random wait in
 * [0, min(cap, base * 2^attempt)]. Jitter spreads retries of many clients
 * so they do not arrive together again.
 */
export function fullJitterBackoffMs(
  attempt: number,
  options: { baseMs?: number; capMs?: number; random?: () => number } = {},
): number {
  const baseMs = options.baseMs ?? 500;
  const capMs = options.capMs ?? 60_000;
  const random = options.random ?? Math.random;
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}

/**
 * The server's requested wait, in milliseconds: `retry-after-ms` first, then
 * `retry-after` as seconds or as an HTTP date (RFC 9110 §10.2.3). Null when
 * absent or unreadable.
 */
export function retryAfterMs(headers: Headers | Record<string, string | undefined>, nowMs: number): number | null {
  const get = (name: string): string | null => {
    if (headers instanceof Headers) return headers.get(name);
    const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
    return key ? (headers[key] ?? null) : null;
  };
  const milliseconds = get("retry-after-ms");
  if (milliseconds !== null && /^\d+(\.\d+)?$/.test(milliseconds.trim())) return Math.ceil(Number(milliseconds));
  const value = get("retry-after");
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  // Only an HTTP date is read as one: Date.parse alone also takes "-5" (a day in 2001) and would retry at once.
  const form = HTTP_DATE.findIndex((format) => format.test(trimmed));
  if (form < 0) return null;
  // asctime carries no zone; HTTP dates are always GMT.
  const date = Date.parse(form === ASCTIME ? `${trimmed} GMT` : trimmed);
  if (Number.isNaN(date)) return null;
  return Math.max(0, date - nowMs);
}

/** RFC 9110 §5.6.7's three forms: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must still read. */
const HTTP_DATE = [
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/,
  /^(Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), \d{2}-(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)-\d{2} \d{2}:\d{2}:\d{2} GMT$/,
  /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun) (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/,
];
const ASCTIME = 2;
