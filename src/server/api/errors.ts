import { BudgetError, ConfigError, InputError, MediagateError } from "../../core/errors.js";
import { ConflictError, IdempotencyKeyReusedError, LineProblemsError, NotFoundError } from "../../app/errors.js";
import { NoEligibleTargetError } from "../../engine/route.js";
import { errorBody, type ErrorBody } from "../error-body.js";

/**
 * The codes the API's own refusals carry, with their status, in the
 * server's one error shape (error-body.ts). Codes are stable snake_case
 * words clients branch on; messages are sentences for people and may change.
 */
export const API_ERROR_CODES = {
  invalid_json: 400,
  /** A path with a `.` or `..` segment, or a percent-encoding that is not of UTF-8 bytes. */
  invalid_path: 400,
  /** What Node's HTTP parser could not read at all. */
  bad_request: 400,
  unauthorized: 401,
  over_budget: 402,
  read_only_token: 403,
  admin_token_required: 403,
  not_found: 404,
  /** The path is answered for other methods: the `Allow` header lists them. */
  method_not_allowed: 405,
  request_timeout: 408,
  ref_conflict: 409,
  not_cancellable: 409,
  output_changed: 409,
  payload_too_large: 413,
  path_too_long: 414,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  invalid_input: 422,
  no_eligible_target: 422,
  idempotency_key_reused: 422,
  headers_too_large: 431,
  internal_error: 500,
  not_configured: 503,
  output_unreadable: 503,
  shutting_down: 503,
} as const;
export type ApiErrorCode = keyof typeof API_ERROR_CODES;

export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly extra: { field?: string; targets?: Array<{ target: string; reasons: string[] }> } = {},
  ) {
    super(message);
  }

  get status(): number {
    return API_ERROR_CODES[this.code];
  }

  body(): ErrorBody {
    return errorBody(this.code, this.message, this.extra);
  }
}

/**
 * The code of an error Fastify raised itself before a handler ran, from its
 * status: a body over the route's limit (413), a content type it could not
 * parse (415), anything else it could not read (400).
 */
export function frameworkErrorCode(status: number): ApiErrorCode {
  if (status === 413) return "payload_too_large";
  if (status === 415) return "unsupported_media_type";
  return "bad_request";
}

/** A domain error as the API says it; anything else is an internal error (logged, not shown). */
export function apiErrorOf(error: unknown): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error instanceof NoEligibleTargetError) {
    return new ApiError("no_eligible_target", "no target of the route can take this request", {
      field: error.field,
      targets: error.targets(),
    });
  }
  if (error instanceof NotFoundError) return new ApiError("not_found", error.message);
  if (error instanceof IdempotencyKeyReusedError) return new ApiError("idempotency_key_reused", error.message, { field: "Idempotency-Key" });
  if (error instanceof ConflictError) return new ApiError(error.code as "ref_conflict" | "not_cancellable", error.message, error.field !== undefined ? { field: error.field } : {});
  if (error instanceof LineProblemsError) {
    return new ApiError("invalid_input", error.message, {
      field: "body",
      targets: error.problems.map((problem) => ({ target: problem.origin, reasons: [problem.error.message] })),
    });
  }
  if (error instanceof InputError) return new ApiError("invalid_input", error.message, { field: error.field });
  if (error instanceof BudgetError) return new ApiError("over_budget", error.message);
  if (error instanceof ConfigError) return new ApiError("not_configured", error.message, { field: error.variable });
  if (error instanceof MediagateError && error.code === "invalid_input") return new ApiError("invalid_input", error.message);
  return null;
}

/** What an unexpected failure was, for the operator's log (the client is told only that it failed): its message and its code where it has one (ECONNREFUSED, a SQLSTATE); never its stack. */
export function failureOf(error: unknown): { err: string; code?: string } {
  const code = (error as { code?: unknown } | null)?.code;
  return { err: error instanceof Error ? error.message || error.name : String(error), ...(typeof code === "string" ? { code } : {}) };
}
