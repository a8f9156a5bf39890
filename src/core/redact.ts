/** Replaces every occurrence of each secret in `text` with `[redacted]`. Secrets shorter than 4 characters are ignored. */
export function redactSecrets(text: string, secrets: Iterable<string | undefined>): string {
  let result = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    result = result.split(secret).join("[redacted]");
  }
  return result;
}

/** Header names whose values are credentials, lower-case. */
export const CREDENTIAL_HEADERS = new Set([
  "authorization",
  "x-key",
  "x-api-key",
  "api-key",
  "cookie",
  "set-cookie",
]);

/** A copy of `headers` with credential values replaced, for logs and error details. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    copy[name] = CREDENTIAL_HEADERS.has(name.toLowerCase()) ? "[redacted]" : value;
  }
  return copy;
}

/**
 * A copy of a JSON-like value (a provider's answer kept as detail) with
 * `redact` applied to every string in it, object keys included. Anything
 * that is not a string, array or plain object is kept as it is.
 */
export function redactDeep<T>(value: T, redact: (text: string) => string): T {
  if (typeof value === "string") return redact(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => redactDeep(item, redact)) as T;
  if (value !== null && typeof value === "object" && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [redact(key), redactDeep(item as unknown, redact)])) as T;
  }
  return value;
}

/**
 * A URL as logs, events and answers show it: its scheme, host and port, and
 * nothing that may be a credential. A receiver's token rides in the path
 * (https://hooks.example/T0123/secret-token), the query or the user part,
 * and which part holds it cannot be known, so each is replaced by
 * `[redacted]` when present. Text that is not a URL is redacted whole.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "[redacted]";
  }
  if (!parsed.host) return `${parsed.protocol}[redacted]`;
  const user = parsed.username || parsed.password ? "[redacted]@" : "";
  const rest = parsed.pathname === "/" && !parsed.search && !parsed.hash ? "/" : "/[redacted]";
  return `${parsed.protocol}//${user}${parsed.host}${rest}`;
}

/**
 * A URL as an error quotes it: its origin and path, so the user can tell
 * which URL was refused, but never its user part (URL.origin has none) nor
 * its query, where signed links and tokens ride ("?…" says there was one).
 * Text that is not a URL is quoted up to any query, unless it holds an "@"
 * (a user part may be all there is to see).
 */
export function displayUrl(url: string): string {
  if (!URL.canParse(url)) return url.includes("@") ? "(not a valid URL)" : url.split("?")[0]!;
  const parsed = new URL(url);
  // A URL without a web origin has the opaque origin "null": a file's path is shown, of the others (mailto:, data:) the scheme.
  if (parsed.origin === "null") return parsed.protocol === "file:" ? `file://${parsed.pathname}` : `${parsed.protocol}…`;
  return `${parsed.origin}${parsed.pathname}${parsed.search ? "?…" : ""}`;
}
