import { OutcomeUnknownError, type ProviderError } from "../../core/errors.js";
import type { HttpResponse, ProviderHttp } from "../http.js";

/** Leading part of an error body quoted in messages (the whole, redacted and truncated, is kept as `rawBody`). */
const QUOTED_BODY_CHARS = 200;

/** What D said, for humans: its error body shape is not shown, so the body is quoted as received. */
function describeAnswer(http: ProviderHttp, response: HttpResponse, action: string): string {
  const body = response.text().trim().slice(0, QUOTED_BODY_CHARS);
  return http.redact(`D answered HTTP ${response.status} to ${action}${body ? `: ${body}` : ""}`);
}

/**
 * The error for a non-2xx answer to a submit. spec D Errors gives only 402
 * and 429; "error body shape and other status codes: not shown", so every
 * other branch rests on the HTTP status alone.
 */
export function submitErrorFrom(http: ProviderHttp, response: HttpResponse, endpoint: string): ProviderError | OutcomeUnknownError {
  const status = response.status;
  const said = describeAnswer(http, response, `the submit to ${endpoint}`);
  if (status === 402) {
    // spec D Errors: insufficient credits; a batch going on would leave some jobs paid and others unrun, so D stops here.
    return http.errorFrom(response, "insufficient_credits", `${said} (insufficient credits: no further D job is submitted)`, { haltsProvider: true });
  }
  if (status === 429) {
    // spec D Errors: more than the allowed concurrent tasks; the local slot count was wrong, so back off and re-learn, never resubmit at once.
    return http.errorFrom(response, "slot_limit", `${said} (more than the allowed concurrent tasks)`, { backpressure: true, retryable: true });
  }
  if (status === 502 || status === 503) {
    // A gateway or an unavailable service refused the request before it was handled.
    return http.errorFrom(response, "provider_unavailable", said, { retryable: true });
  }
  if (status >= 500) {
    // 500, 504 and other 5xx: the job may have been created (and billed); D has no idempotency, so it is never resent on its own.
    return new OutcomeUnknownError("d", `${said}; the job may have been created, so it is not resubmitted automatically`);
  }
  if (status === 401 || status === 403) {
    return http.errorFrom(response, "provider_rejected", `${said} (check MEDIAGATE_D_API_KEY: D takes the key in the x-key header)`);
  }
  if (status >= 400) return http.errorFrom(response, "provider_rejected", said);
  return http.errorFrom(response, "unexpected_status", said);
}

/** The error for a non-2xx answer to a poll (after the HTTP layer's own resends of 429 and 5xx). */
export function pollErrorFrom(http: ProviderHttp, response: HttpResponse, jobId: string): ProviderError {
  const status = response.status;
  const said = describeAnswer(http, response, `the poll of job ${jobId}`);
  if (status === 429) return http.errorFrom(response, "rate_limited", said, { retryable: true });
  if (status === 408 || status >= 500) return http.errorFrom(response, "provider_unavailable", said, { retryable: true });
  if (status >= 400) return http.errorFrom(response, "provider_rejected", said);
  return http.errorFrom(response, "unexpected_status", said);
}
