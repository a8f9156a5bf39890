/**
 * The error answer of the emulated service E. The spec says "Error body shape
 * ...: not shown", so the sandbox chooses `{ "error_code", "message" }`, with
 * `field` naming the request field when one is at fault. The token endpoint
 * answers in OAuth 2.0 form instead (token-errors in tokens.ts).
 */
export type EErrorCode =
  | "invalid_api_key"
  | "invalid_token"
  | "token_expired"
  | "unsupported_media_type"
  | "validation_error"
  | "upload_expired"
  | "upload_not_found"
  | "not_found"
  | "job_already_finished"
  | "too_many_requests"
  | "unauthorized"
  | "conflict"
  | "service_unavailable"
  | "link_signature_invalid"
  | "link_expired"
  | "internal_error";

export interface EErrorBody {
  error_code: EErrorCode;
  message: string;
  field?: string;
}

export class EApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorCode: EErrorCode,
    message: string,
    readonly field?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "EApiError";
  }

  body(): EErrorBody {
    return { error_code: this.errorCode, message: this.message, ...(this.field ? { field: this.field } : {}) };
  }
}

/** A 400 naming the field: the sandbox's answer to every validation failure of a submit body. */
export function validationError(field: string, message: string): EApiError {
  return new EApiError(400, "validation_error", `${field}: ${message}`, field);
}
