import { OutcomeUnknownError, type ProviderError } from "../../core/errors.js";
import type { HttpResponse, ProviderHttp } from "../http.js";

/** Leading part of an error body quoted in messages (the whole, redacted and truncated, is kept as `rawBody`). */
const QUOTED_BODY_CHARS = 200;

/** What E said, for humans: "Error body shape … not shown", so the body is quoted as received. */
function describeAnswer(http: ProviderHttp, response: HttpResponse, action: string): string {
  const body = response.text().trim().slice(0, QUOTED_BODY_CHARS);
  return http.redact(`E answered HTTP ${response.status} to ${action}${body ? `: ${body}` : ""}`);
}

/**
 * spec E Errors: every generation endpoint lists 429; "honour a retry-after
 * header if present, otherwise use exponential backoff". The quota is the
 * organisation's, so it is back-pressure: the job waits (retryAfterMs when
 * given, else the engine's backoff) and is never resent at once.
 */
function rateLimited(http: ProviderHttp, response: HttpResponse, said: string): ProviderError {
  return http.errorFrom(response, "rate_limited", `${said} (over the organisation's 4 per minute or 9,000 per day)`, { backpressure: true, retryable: true });
}

/**
 * The error for a non-2xx answer to a submit (after one token refresh on 401).
 * spec E Errors: "The newer endpoint also lists 401, 409 and 503 … the
 * meaning of 401, 409 and 503: not shown", so they rest on the HTTP status alone.
 */
export function submitErrorFrom(http: ProviderHttp, response: HttpResponse, operation: string): ProviderError | OutcomeUnknownError {
  const status = response.status;
  const said = describeAnswer(http, response, `the submit of ${operation}`);
  if (status === 429) return rateLimited(http, response, said);
  if (status === 401) {
    return http.errorFrom(response, "unauthorized", `${said} (refused again with a fresh token: check MEDIAGATE_E_CLIENT_ID, the client's access and MEDIAGATE_E_SCOPES)`);
  }
  // Meaning not shown: a conflict or an unavailable service did not start the job, so it is tried again later with the raw body kept.
  if (status === 409) return http.errorFrom(response, "conflict", said, { retryable: true });
  if (status === 502 || status === 503) return http.errorFrom(response, "provider_unavailable", said, { retryable: true });
  if (status >= 500) {
    // 500, 504 and other 5xx: the job may have been created; E has no idempotency, so it is never resent on its own.
    return new OutcomeUnknownError("e", `${said}; the job may have been created, so it is not resubmitted automatically`);
  }
  if (status >= 400) return http.errorFrom(response, "provider_rejected", said);
  return http.errorFrom(response, "unexpected_status", said);
}

/** The error for a non-2xx answer to a poll, cancel or upload (after the HTTP layer's resends and one token refresh on 401). */
export function callErrorFrom(http: ProviderHttp, response: HttpResponse, action: string): ProviderError {
  const status = response.status;
  const said = describeAnswer(http, response, action);
  if (status === 429) return rateLimited(http, response, said);
  if (status === 401) return http.errorFrom(response, "unauthorized", `${said} (refused again with a fresh token)`);
  if (status === 409) return http.errorFrom(response, "conflict", said, { retryable: true });
  if (status === 408 || status >= 500) return http.errorFrom(response, "provider_unavailable", said, { retryable: true });
  if (status >= 400) return http.errorFrom(response, "provider_rejected", said);
  return http.errorFrom(response, "unexpected_status", said);
}

/**
 * The error for a non-2xx answer to the token request. Its error body is not
 * shown. A refused client id, secret or scope list fails every job alike, so
 * it halts E; a busy or failing token endpoint is retried later.
 */
export function tokenErrorFrom(http: ProviderHttp, response: HttpResponse): ProviderError {
  const status = response.status;
  const said = describeAnswer(http, response, "the token request");
  if (status === 429 || status === 408 || status >= 500) return http.errorFrom(response, "auth_unavailable", said, { retryable: true });
  return http.errorFrom(
    response,
    "auth_failed",
    `${said} (check MEDIAGATE_E_CLIENT_ID, MEDIAGATE_E_CLIENT_SECRET and MEDIAGATE_E_SCOPES; no further E job is submitted)`,
    { haltsProvider: true },
  );
}
