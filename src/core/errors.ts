import { displayUrl } from "./redact.js";

/**
 * Domain errors are values with stable codes. Messages are for humans and may
 * change; code branches on `code` and the typed fields, never on messages.
 */
export class MediagateError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad input: which field, what was wrong, what is allowed. Raised before any money is spent. */
export class InputError extends MediagateError {
  constructor(
    readonly field: string,
    readonly reason: string,
    readonly allowed?: string,
  ) {
    super("invalid_input", `${field}: ${reason}${allowed ? ` (allowed: ${allowed})` : ""}`);
  }
}

/**
 * Missing or wrong configuration, naming the variable to set. `code` is
 * `not_configured` unless a more precise one helps scripts (`store_unreachable`).
 */
export class ConfigError extends MediagateError {
  constructor(
    readonly variable: string,
    message: string,
    code = "not_configured",
  ) {
    super(code, message);
  }
}

/** The estimate of a command or batch exceeds the budget; nothing was sent. */
export class BudgetError extends MediagateError {
  constructor(
    readonly estimateMicroUsd: number,
    readonly budgetMicroUsd: number,
    message: string,
  ) {
    super("over_budget", message);
  }
}

export interface ProviderErrorDetail {
  provider: string;
  /** HTTP status, when an answer arrived. */
  httpStatus?: number;
  /** The provider's own error code, when it has one. */
  providerCode?: string;
  /** Safe to retry the same request later (5xx, timeouts before sending, ...). */
  retryable: boolean;
  /**
   * The provider pushes back on capacity (slot limit, concurrency): the job
   * goes back to the queue and waits for a slot with backoff; never resubmitted at once.
   */
  backpressure?: boolean;
  /** No further jobs of this provider should be submitted (insufficient credits or balance). */
  haltsProvider?: boolean;
  /**
   * A read said the provider does not know the task (404 on a task it
   * accepted): seen repeatedly over a bounded time, the job ends (see the
   * engine's `unrecognisedFor`); once is not enough (a restart, a replica lag).
   */
  taskUnknown?: boolean;
  /** Server-suggested wait, from Retry-After or similar. */
  retryAfterMs?: number;
  /** The answer body, truncated and with secrets redacted. */
  rawBody?: string;
}

/** A provider call failed. `code` is our stable snake_case code (`insufficient_credits`, `slot_limit`, ...). */
export class ProviderError extends MediagateError {
  readonly detail: ProviderErrorDetail;
  constructor(code: string, message: string, detail: ProviderErrorDetail, options?: { cause?: unknown }) {
    super(code, message, options);
    this.detail = detail;
  }
}

/**
 * A request was (or may have been) sent but no answer was recorded: the
 * provider may or may not have accepted it. For a provider without
 * idempotency, the job must not be resubmitted automatically.
 */
export class OutcomeUnknownError extends MediagateError {
  constructor(
    readonly provider: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super("submit_outcome_unknown", message, options);
  }
}

/** A URL handed back by a provider (or sent to one) failed the URL-safety rules. */
export class UnsafeUrlError extends MediagateError {
  constructor(
    /** The URL as given, for the code that refused it; the message quotes it without user part or query (`displayUrl`). */
    readonly url: string,
    readonly reason: string,
  ) {
    super("unsafe_url", `refused URL ${displayUrl(url)}: ${reason}`);
  }
}

export function isMediagateError(error: unknown): error is MediagateError {
  return error instanceof MediagateError;
}
