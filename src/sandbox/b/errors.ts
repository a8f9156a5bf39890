/**
 * Refusals that are not a job object (spec B names only 409, 400 and 429;
 * the body shape of the others is not shown). The sandbox answers them as
 * `{ "error": { "code", "message" } }`, the same pair a failed job carries:
 * `code` is stable snake_case, `message` is for humans and may change.
 */
export type BErrorCode =
  /** 401: neither `X-API-Key` nor `Authorization: Bearer` (other vendors' headers do not count). */
  | "missing_api_key"
  /** 401: a key the account does not have. */
  | "invalid_api_key"
  /** 404: no such operation in the catalog (also a percent-encoded slash: slashes are sent as is). */
  | "operation_not_found"
  /** 404: no job with this id. */
  | "job_not_found"
  /** 404: any other path. */
  | "not_found"
  /** 400: webhook_url refused (spec B Errors). */
  | "invalid_webhook_url"
  /** 400: an empty or over-long Idempotency-Key. */
  | "invalid_idempotency_key"
  /** 422: an Idempotency-Key already used by this API key with another body (spec B Idempotency 2). */
  | "idempotency_key_reused"
  /** 400: a body that is not JSON. */
  | "invalid_json"
  /** 415: a body that is not application/json. */
  | "unsupported_media_type"
  /** 400: spend read dates missing, malformed, reversed or more than 366 days apart. */
  | "invalid_date_range"
  /** 409: content (or deletion) asked before the job completed (spec B Errors). */
  | "job_not_completed"
  /** 409: content of a failed job: there is none. */
  | "job_failed"
  /** 410: the job's media was erased by DELETE. */
  | "media_deleted"
  /** 403: a result address past its lifetime, or with a wrong signature. */
  | "url_expired"
  | "bad_signature";

export interface BErrorBody {
  error: { code: BErrorCode; message: string };
}

export class BApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: BErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "BApiError";
  }

  body(): BErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}
