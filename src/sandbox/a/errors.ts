/**
 * The error answer of the emulated service A. The spec says "Error body shape
 * and error codes: not shown", so the sandbox chooses
 * `{ "error": { "code", "message", "param"? } }` where `param` names the
 * offending request field (`ratio`, `content[2].role`).
 */
export type AErrorCode =
  | "AuthenticationError"
  | "KeyPlanMismatch"
  | "InvalidParameter"
  | "UnsupportedMediaType"
  | "NotFound"
  | "RateLimitExceeded"
  | "SignatureDoesNotMatch"
  | "RequestExpired"
  | "DownloadLimitExceeded"
  | "InternalError";

export interface AErrorBody {
  error: { code: AErrorCode; message: string; param?: string };
}

export class AApiError extends Error {
  constructor(
    readonly statusCode: number,
    readonly code: AErrorCode,
    message: string,
    readonly param?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AApiError";
  }

  body(): AErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.param ? { param: this.param } : {}) } };
  }
}

/** A 400 naming the field, the sandbox's answer to every validation failure. */
export function invalidParameter(param: string, message: string): AApiError {
  return new AApiError(400, "InvalidParameter", `${param}: ${message}`, param);
}
