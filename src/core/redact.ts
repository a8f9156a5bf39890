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
