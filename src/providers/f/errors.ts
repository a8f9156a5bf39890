import { OutcomeUnknownError, type ProviderError } from "../../core/errors.js";
import type { HttpResponse, ProviderHttp } from "../http.js";

/** Leading part of an error body quoted in messages (the whole, redacted and truncated, is kept as `rawBody`). */
const QUOTED_BODY_CHARS = 200;

/** What F said, for humans: "Error body shape and other codes: not shown", so the body is quoted as received. */
function describeAnswer(http: ProviderHttp, response: HttpResponse, action: string): string {
  const body = response.text().trim().slice(0, QUOTED_BODY_CHARS);
  return http.redact(`F answered HTTP ${response.status} to ${action}${body ? `: ${body}` : ""}`);
}

/**
 * The error for a non-2xx answer to a submit. spec F Errors shows only 400
 * (FLASH on this model version) and "rejected" for the prompt and
 * webhook_url rules; every other branch rests on the HTTP status alone.
 */
export function submitErrorFrom(http: ProviderHttp, response: HttpResponse, model: string): ProviderError | OutcomeUnknownError {
  const status = response.status;
  const said = describeAnswer(http, response, `the generate request to ${model}`);
  if (status === 429) {
    // Not shown for F; read as the usual "too many": back off and let the engine re-learn its limits, never resend at once.
    return http.errorFrom(response, "rate_limited", said, { backpressure: true, retryable: true });
  }
  if (status === 503) {
    // Service unavailable: refused before the request was handled.
    return http.errorFrom(response, "provider_unavailable", said, { retryable: true });
  }
  if (status >= 500) {
    // 500, 502, 504 and the rest: a generation may have been created (and billed per image); F has no idempotency.
    return new OutcomeUnknownError("f", `${said}; a generation may have been created, so it is not resubmitted automatically`);
  }
  if (status === 401 || status === 403) {
    return http.errorFrom(response, "provider_rejected", `${said} (check MEDIAGATE_F_API_KEY: F takes the key in the Api-Key header)`);
  }
  if (status === 404) return http.errorFrom(response, "provider_rejected", `${said} (is "${model}" one of F's model slugs?)`);
  if (status >= 400) return http.errorFrom(response, "provider_rejected", said);
  return http.errorFrom(response, "unexpected_status", said);
}

/** The error for a non-2xx answer to a generation read (after the HTTP layer's own resends of 429 and 5xx). */
export function pollErrorFrom(http: ProviderHttp, response: HttpResponse, generationId: string): ProviderError {
  const status = response.status;
  const said = describeAnswer(http, response, `the read of generation ${generationId}`);
  if (status === 429) return http.errorFrom(response, "rate_limited", said, { retryable: true });
  if (status === 408 || status >= 500) return http.errorFrom(response, "provider_unavailable", said, { retryable: true });
  // spec F shows no 404 for the read; F's API answers it for a generation it does not know.
  if (status === 404) return http.errorFrom(response, "task_not_found", said, { taskUnknown: true });
  if (status >= 400) return http.errorFrom(response, "provider_rejected", said);
  return http.errorFrom(response, "unexpected_status", said);
}
