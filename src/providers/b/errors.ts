import { OutcomeUnknownError, type ProviderError } from "../../core/errors.js";
import type { HttpResponse, ProviderHttp } from "../http.js";
import { jobErrorOf, parseJob, type BJob } from "./job-object.js";

/** Leading part of an answer quoted in messages (the whole, redacted and truncated, is kept as `rawBody`). */
const QUOTED_BODY_CHARS = 200;

/** spec B Errors: a submit refused for want of money fails the job with this code. */
export const INSUFFICIENT_BALANCE = "insufficient_balance";

function bodyOf(response: HttpResponse): unknown {
  try {
    return response.json();
  } catch {
    return undefined;
  }
}

function describeAnswer(http: ProviderHttp, response: HttpResponse, action: string): string {
  const body = response.text().trim().slice(0, QUOTED_BODY_CHARS);
  return http.redact(`B answered HTTP ${response.status} to ${action}${body ? `: ${body}` : ""}`);
}

/**
 * B's `error.code` in an answer: of a job object, of the failed envelope of a
 * 429, or of the job that envelope carries. The envelope's exact shape is
 * not shown; these are the places the spec's words point to.
 */
export function providerCodeOf(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const record = body as Record<string, unknown>;
  const error = record.error;
  if (typeof error === "object" && error !== null && typeof (error as Record<string, unknown>).code === "string") {
    return (error as Record<string, string>).code;
  }
  const job = parseJob(record.job);
  return job ? jobErrorOf(job)?.code : undefined;
}

/**
 * spec B Job status "(submit) → failed": a rejected submission returns the
 * job object with `error`. Branches on `error.code` only; the message is
 * kept as diagnostic text. The failed job stays under its Idempotency-Key
 * (Idempotency 1 and 3), so resending with that key can only replay it.
 */
export function rejectionFrom(http: ProviderHttp, response: HttpResponse, job: BJob, apiId: string): ProviderError {
  const error = jobErrorOf(job);
  const code = error?.code;
  const said = http.redact(
    `B rejected the submit to ${apiId} (job ${job.id} failed${code ? ` with ${code}` : " without an error code"}${error?.message ? `: ${error.message}` : ""}); resending with the same Idempotency-Key replays this failure, a retry needs a new key`,
  );
  if (code === INSUFFICIENT_BALANCE) {
    // spec B Errors: insufficient balance; a batch going on would leave some jobs paid and others unrun, so B stops here.
    return http.errorFrom(response, INSUFFICIENT_BALANCE, `${said} (top up the prepaid balance: no further B job is submitted)`, {
      haltsProvider: true,
      providerCode: code,
    });
  }
  return http.errorFrom(response, "provider_rejected", said, code !== undefined ? { providerCode: code } : {});
}

/**
 * The error for a submit answer that is not an accepted job. Any HTTP status
 * may carry the rejected job object (its status code is not shown), so the
 * body is read first; then the statuses the spec names (429, 400 for a
 * refused webhook_url); the rest rests on the HTTP status.
 */
export function submitErrorFrom(
  http: ProviderHttp,
  response: HttpResponse,
  apiId: string,
  sentWebhookUrl: boolean,
): ProviderError | OutcomeUnknownError {
  const status = response.status;
  const body = bodyOf(response);
  const providerCode = providerCodeOf(body);
  const codeFlag = providerCode !== undefined ? { providerCode } : {};
  const said = describeAnswer(http, response, `the submit to ${apiId}`);
  if (status === 429) {
    // spec B Errors: rate or concurrency exceeded; read Retry-After and back off. The local slot count was wrong: never resend at once.
    return http.errorFrom(response, "rate_limited", `${said} (rate or concurrency ceiling reached)`, { backpressure: true, retryable: true, ...codeFlag });
  }
  const job = parseJob(body);
  if (job?.status === "failed") return rejectionFrom(http, response, job, apiId);
  if (status >= 200 && status < 300) {
    // Accepted, but no job object to track. B is idempotent, so the engine may resend with the same key to read the job back.
    return new OutcomeUnknownError("b", `${said}; the answer is not a job object with an id and a status, so the submit is resent with the same Idempotency-Key`);
  }
  if (status === 400 && sentWebhookUrl) {
    // spec B Errors and Events 1: a rejected webhook_url answers 400.
    return http.errorFrom(response, "webhook_url_rejected", `${said} (B refused the callback address built from MEDIAGATE_PUBLIC_URL)`, codeFlag);
  }
  if (status === 401 || status === 403) {
    return http.errorFrom(response, "provider_rejected", `${said} (check MEDIAGATE_B_API_KEY: B takes the key in the X-API-Key header)`, codeFlag);
  }
  if (status === 408 || status >= 500) {
    // Safe to resend: the same body with the same Idempotency-Key cannot create a second job (spec B Idempotency 1).
    return http.errorFrom(response, "provider_unavailable", `${said}; resent later with the same Idempotency-Key`, { retryable: true, ...codeFlag });
  }
  return http.errorFrom(response, status >= 400 ? "provider_rejected" : "unexpected_status", said, codeFlag);
}

/** The error for a read (job, content, catalog, quote, balance, spend, delete) answered other than expected, after the HTTP layer's resends. */
export function readErrorFrom(http: ProviderHttp, response: HttpResponse, action: string): ProviderError {
  const status = response.status;
  const providerCode = providerCodeOf(bodyOf(response));
  const codeFlag = providerCode !== undefined ? { providerCode } : {};
  const said = describeAnswer(http, response, action);
  if (status === 429) return http.errorFrom(response, "rate_limited", said, { retryable: true, ...codeFlag });
  if (status === 408 || status >= 500) return http.errorFrom(response, "provider_unavailable", said, { retryable: true, ...codeFlag });
  if (status === 401 || status === 403) {
    return http.errorFrom(response, "provider_rejected", `${said} (check MEDIAGATE_B_API_KEY: B takes the key in the X-API-Key header)`, codeFlag);
  }
  if (status === 404) return http.errorFrom(response, "not_found", said, codeFlag);
  return http.errorFrom(response, status >= 400 ? "provider_rejected" : "unexpected_status", said, codeFlag);
}

/** An answer whose body is not what was expected, for a call that answered 2xx. */
export function invalidAnswer(http: ProviderHttp, response: HttpResponse, what: string): ProviderError {
  return http.errorFrom(response, "invalid_response", http.redact(`B answered ${what} (HTTP ${response.status})`));
}
