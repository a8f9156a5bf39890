import type { Clock } from "../core/clock.js";
import type { ProviderHttp } from "./http.js";

export type ProviderId = "a" | "b" | "c" | "d" | "e" | "f";
export const PROVIDER_IDS: readonly ProviderId[] = ["a", "b", "c", "d", "e", "f"];

/** What a user asks for, before validation: native fields of the provider in `input`. */
export interface JobRequest {
  provider: ProviderId;
  model: string;
  /** Operation within the provider when it has several (E's generate/expand/…, B's function). */
  operation?: string;
  /** The provider's native request fields. */
  input: Record<string, unknown>;
  /**
   * Reference images given outside `input` (the CLI's `--image`): each an
   * http(s) URL or a local file already read into `{ fileName, bytes }`.
   * The adapter maps them onto its native fields.
   */
  images?: Array<string | { fileName: string; bytes: Buffer }>;
}

/** A request that passed validation: `body` is exactly what will be sent. */
export interface ValidatedRequest {
  provider: ProviderId;
  model: string;
  operation: string | null;
  body: Record<string, unknown>;
  /** Accepted, but the user should know (e.g. "D reduces outputs above 4 MP"). */
  warnings: string[];
  /** Facts the adapter derived for pricing and limits (JSON-serialisable; stored with the job). */
  facts: Record<string, unknown>;
}

/** An estimate: integer micro-USD, or null when the operation is unpriced; `source` always says where it came from. */
export interface Estimate {
  microUsd: number | null;
  source: string;
}

export interface RateWindow {
  /** Shared by every request to one provider account, e.g. `e:org` or `a:standard`. */
  key: string;
  limit: number;
  windowMs: number;
}

export interface ProviderLimits {
  /** Sliding windows that every request (submits and polls) counts against. Empty when none is published. */
  rateWindows: RateWindow[];
  /**
   * Concurrency pools a job occupies from submit until the provider frees it
   * (all of them at once; e.g. D's gen-ctx-max takes its own 6-pool and the
   * account's 24-pool). Empty when the provider has none.
   */
  slotPools: Array<{ key: string; capacity: number }>;
  /** Polling pace bounds: never poll one job more often than `minIntervalMs`. */
  poll: { minIntervalMs: number; maxIntervalMs: number };
  /** A job still not terminal this long after submit fails with `tracking_deadline_exceeded`. */
  trackingDeadlineMs: number;
  /**
   * Re-sending a submit after a crash cannot create a second job (B's
   * Idempotency-Key). When false, a job that died mid-submit becomes
   * `unknown_submission` and is never resubmitted automatically.
   */
  idempotentSubmit: boolean;
}

/** Everything the provider returned on submit that is needed to track the job, stored exactly as given. */
export interface Submitted {
  providerJobId: string;
  handles: Record<string, unknown>;
}

/** A result the provider produced: where to download it, and what to keep beside it. */
export interface OutputRef {
  url: string;
  /** Extra facts kept with the saved file (seed, alt text, …). */
  metadata?: Record<string, unknown>;
}

/** The provider's view of a job, normalised. "Not done yet" is a value, never an exception. */
export type ProviderStatus =
  | {
      kind: "pending";
      /** The provider's raw status value, kept for display ("Pending", "Task not found", …). */
      providerStatus: string;
      /** False once the provider has released the job's concurrency slot while it keeps working. */
      holdsSlot?: boolean;
      raw: unknown;
    }
  | { kind: "succeeded"; providerStatus: string; outputs: OutputRef[]; usage?: unknown; raw: unknown }
  | { kind: "failed"; providerStatus: string; code: string; message: string; raw: unknown }
  | { kind: "cancelled"; providerStatus: string; raw: unknown }
  | { kind: "expired"; providerStatus: string; raw: unknown };

/** What the adapter may use to talk to its provider. It knows nothing about the store or scheduling. */
export interface CallContext {
  http: ProviderHttp;
  clock: Clock;
  signal?: AbortSignal;
}

/** A charge computed or read for a finished job. `microUsd` null means unknown. */
export interface Charge {
  microUsd: number | null;
  source: string;
}

export interface ProviderAdapter {
  readonly id: ProviderId;
  readonly displayName: string;
  /** Models (and operations) this adapter knows, for help text and `quote`. */
  models(): string[];
  /** Throws InputError(field, reason, allowed). Pure: no I/O. */
  validate(request: JobRequest): ValidatedRequest;
  estimate(request: ValidatedRequest): Promise<Estimate>;
  limits(request: ValidatedRequest): ProviderLimits;
  /** Sends the submit. Throws ProviderError (with retryable/backpressure/haltsProvider) or OutcomeUnknownError. */
  submit(request: ValidatedRequest, context: CallContext): Promise<Submitted>;
  poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus>;
  cancel?(submitted: Submitted, context: CallContext): Promise<void>;
  /** The charge of a finished job, where the provider does not report one (priced by formula). */
  charge(request: ValidatedRequest, outcome: ProviderStatus): Charge;
}
