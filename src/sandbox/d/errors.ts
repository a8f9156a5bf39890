/**
 * spec D Errors: "Error body shape and other status codes: not shown". Only
 * 402 and 429 are given. The sandbox answers every refusal with a flat JSON
 * object `{ code, message, field? }`: `code` is stable snake_case, `field`
 * names the request field at fault (422 only), `message` is for humans.
 */
export type DErrorCode =
  /** 401: no `x-key` header, or not a key of the account. */
  | "invalid_key"
  /** 401: an `Authorization: Bearer` header without a valid `x-key` (spec D Authentication 1: not a bearer token). */
  | "bearer_not_accepted"
  /** 404: an endpoint identifier with no hosted endpoint (dev tier, base variants, typos). */
  | "endpoint_not_found"
  /** 404: any other path, or a polling path asked on the submit host. */
  | "not_found"
  /** 415: a body that is not `application/json`. */
  | "unsupported_media_type"
  /** 422: a field breaks a rule; `field` names it. */
  | "invalid_field"
  /** 422: a field the service does not support (spec D: negative prompts are not supported). */
  | "unsupported_field"
  /** 402 (spec D Errors). */
  | "insufficient_credits"
  /** 429 (spec D Errors). */
  | "too_many_active_tasks"
  /** 403: a result link past its ten minutes, or with a wrong signature. */
  | "link_expired"
  | "bad_signature";

export interface DErrorBody {
  code: DErrorCode;
  message: string;
  field?: string;
}

export class DApiError extends Error {
  constructor(
    readonly httpStatus: number,
    readonly code: DErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = "DApiError";
  }

  body(): DErrorBody {
    return { code: this.code, message: this.message, ...(this.field !== undefined ? { field: this.field } : {}) };
  }
}

export function invalidField(field: string, message: string): DApiError {
  return new DApiError(422, "invalid_field", `${field}: ${message}`, field);
}
