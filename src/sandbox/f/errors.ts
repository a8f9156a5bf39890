/**
 * The error answer of the emulated service F. The spec says "Error body shape
 * and other codes: not shown", so the sandbox chooses
 * `{ "error": { "code", "message", "field"? } }`.
 */
export type FErrorCode =
  | "unauthorized"
  | "invalid_request"
  | "unsupported_media_type"
  | "payload_too_large"
  | "unknown_model"
  | "not_found"
  | "link_signature_invalid"
  | "link_expired"
  | "internal_error";

export interface FErrorBody {
  error: { code: FErrorCode; message: string; field?: string };
}

export class FApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: FErrorCode,
    message: string,
    readonly field?: string,
  ) {
    super(message);
    this.name = "FApiError";
  }

  body(): FErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.field ? { field: this.field } : {}) } };
  }
}

/** A 400 naming the field: the sandbox's answer to every refused request field. */
export function invalidRequest(field: string, message: string): FApiError {
  return new FApiError(400, "invalid_request", `${field}: ${message}`, field);
}
