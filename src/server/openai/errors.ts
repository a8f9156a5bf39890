import { ImagesNotMadeError, ModelNotFoundError } from "../../app/openai.js";
import { apiErrorOf } from "../api/errors.js";

/**
 * OpenAI's error shape, on the routes that answer OpenAI's shapes:
 * `{"error": {"message", "type", "param", "code"}}`, with the statuses the
 * official SDKs map to their typed errors (400 BadRequestError, 401
 * AuthenticationError, 404 NotFoundError, 429 RateLimitError, …).
 */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    readonly type: "invalid_request_error" | "authentication_error" | "permission_error" | "insufficient_quota" | "requests" | "server_error",
    readonly code: string | null,
    message: string,
    readonly param: string | null = null,
    /**
     * Whether the SDKs may send the request again (their `x-should-retry`
     * header): never for a call that admitted jobs, since a retry would
     * make (and pay for) them again.
     */
    readonly retry: boolean | null = null,
    /** Headers the answer carries (a 429's `retry-after`). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): OpenAiErrorBody {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

/**
 * An error as OpenAI's routes say it. mediagate's own refusal is read first
 * (`apiErrorOf`), then worded as OpenAI words the same thing: a refused
 * field 400 naming it in `param`; a budget refusal 402
 * `insufficient_quota` (not OpenAI's 429, which the SDKs retry: a budget
 * does not refill by waiting); anything not known is null (a 500, logged).
 */
export function openAiErrorOf(error: unknown): OpenAiError | null {
  if (error instanceof OpenAiError) return error;
  if (error instanceof ModelNotFoundError) return new OpenAiError(404, "invalid_request_error", "model_not_found", error.message, "model");
  if (error instanceof ImagesNotMadeError) {
    const status = error.code === "generation_failed" ? 500 : error.code === "timeout" ? 504 : 503;
    return new OpenAiError(status, "server_error", error.code, error.message, null, false);
  }
  const known = apiErrorOf(error);
  if (!known) return null;
  const field = known.extra.field ?? null;
  const reasons = known.extra.targets?.map((target) => `${target.target}: ${target.reasons.join("; ")}`) ?? [];
  const message = reasons.length > 0 ? `${known.message} (${reasons.join(" | ")})` : known.message;
  switch (known.status) {
    case 401:
      return new OpenAiError(401, "invalid_request_error", "invalid_api_key", message);
    case 402:
      return new OpenAiError(402, "insufficient_quota", "insufficient_quota", message, null, false);
    case 403:
      return new OpenAiError(403, "permission_error", known.code, message);
    case 404:
      return new OpenAiError(404, "invalid_request_error", known.code, message, field);
    case 409:
      // The SDKs retry a 409 (a lock, to them): a job that cannot be cancelled stays so.
      return new OpenAiError(409, "invalid_request_error", known.code, message, field, false);
    case 413:
    case 416:
      return new OpenAiError(known.status, "invalid_request_error", known.code, message, field);
    case 422:
      return new OpenAiError(400, "invalid_request_error", known.code, message, field);
    default:
      if (known.status >= 500) return new OpenAiError(known.status, "server_error", known.code, message, field);
      return new OpenAiError(400, "invalid_request_error", known.code, message, field);
  }
}
