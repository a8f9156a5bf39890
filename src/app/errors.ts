import { InputError, MediagateError } from "../core/errors.js";

/**
 * The application's refusals, as values the faces map to their own answers
 * (an HTTP status, an exit code, a page). A thing the caller may not see is
 * never "forbidden": it is not found, so its existence is not revealed.
 */
export class NotFoundError extends MediagateError {
  constructor(message: string) {
    super("not_found", message);
  }
}

/** The request contradicts what is stored: a ref already used for another request, a job that cannot be cancelled now. */
export class ConflictError extends MediagateError {
  constructor(
    code: "ref_conflict" | "not_cancellable",
    message: string,
    readonly field?: string,
  ) {
    super(code, message);
  }
}

/** Some lines of a batch are refused: each problem names its line and field; nothing was queued. */
export class LineProblemsError extends MediagateError {
  constructor(readonly problems: ReadonlyArray<{ origin: string; error: InputError }>) {
    super("invalid_input", `${problems.length} line(s) of the batch are refused; nothing was queued`);
  }
}

/** An `Idempotency-Key` sent again with another request: its first request is answered to it, not this one. */
export class IdempotencyKeyReusedError extends MediagateError {
  constructor(readonly key: string) {
    super("idempotency_key_reused", `Idempotency-Key "${key}" was used for another request in the last 24 hours; send a new key for a new request`);
  }
}
