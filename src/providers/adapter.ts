import type { Clock } from "../core/clock.js";
import type { CommonCapabilities, CommonMapping, CommonRequest } from "../core/common-request.js";
import type { ProviderId, RateWindow } from "../core/provider-id.js";
import type { ProviderHttp } from "./http.js";

export { PROVIDER_IDS, type ProviderId, type RateWindow } from "../core/provider-id.js";

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

/** A model (and operation) a common request is routed to: `d/gen-2-pro`, `b/<vendor>/<model>/<function>`. */
export interface CommonTarget {
  model: string;
  operation?: string;
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
      /**
       * Set when the answer is not a status the spec shows (or says the
       * provider does not know the task): what was seen, in words. The job
       * keeps polling, but answers like this in a row for a bounded time end it.
       */
      unrecognised?: { said: string; taskUnknown: boolean };
      raw: unknown;
    }
  | { kind: "succeeded"; providerStatus: string; outputs: OutputRef[]; usage?: unknown; raw: unknown }
  | { kind: "failed"; providerStatus: string; code: string; message: string; raw: unknown }
  | { kind: "cancelled"; providerStatus: string; raw: unknown }
  | { kind: "expired"; providerStatus: string; raw: unknown };

/** The job a call is made for, as far as an adapter may know it. */
export interface CallJob {
  /** Our job id (never sent to a provider unless the adapter chooses to, e.g. in a callback URL). */
  id: string;
  /**
   * For providers with `idempotentSubmit`: the key stored with the job before
   * this submit was sent; a resumed submit gets the same key, a resubmit a new one.
   */
  idempotencyKey: string | null;
  /**
   * Where the provider should deliver notifications for this job, when
   * MEDIAGATE_PUBLIC_URL is set and the adapter has `webhooks`; else null.
   */
  callbackUrl: string | null;
}

/** What the adapter may use to talk to its provider. It knows nothing about the store or scheduling. */
export interface CallContext {
  http: ProviderHttp;
  clock: Clock;
  signal?: AbortSignal;
  /** Present for calls made on behalf of one job (submit, poll, cancel, settle). */
  job?: CallJob;
}

/** A webhook request exactly as received: the raw bytes are what signatures cover. */
export interface WebhookDelivery {
  rawBody: Buffer;
  /** Header names in lower case. */
  headers: Record<string, string | undefined>;
  /** Our job id when the callback URL carried it (`…/webhooks/{provider}/{jobId}`). */
  jobId: string | null;
}

/**
 * What a delivery means once checked. `rejected` is answered 4xx and changes
 * nothing; its `code` is a stable snake_case word from a small fixed set
 * (refusals are counted by it, so it must never carry request data), its
 * `reason` a sentence for humans. `accepted` names the provider job and,
 * when the delivery is signed and may be trusted, the status it reports;
 * without `status` the engine only reads the job at once (an unsigned
 * callback's body is never trusted).
 */
export type WebhookVerdict =
  | { kind: "rejected"; code: string; reason: string }
  | { kind: "accepted"; deliveryId: string; providerJobId: string | null; status?: ProviderStatus };

export interface WebhookSupport {
  /** Verifies over the raw bytes before anything is parsed. Never throws for a bad delivery: returns `rejected`. */
  verify(delivery: WebhookDelivery, context: CallContext): Promise<WebhookVerdict>;
}

/**
 * A provider that bills after the job ends (B): the settled charge is the
 * accounting fact. `pending` and `unavailable` say when to read again.
 */
export type Settlement =
  | { kind: "pending"; retryAfterMs: number; raw: unknown }
  | { kind: "unavailable"; retryAfterMs: number; raw: unknown }
  | { kind: "settled"; microUsd: number; raw: unknown };

/** A charge computed or read for a finished job. `microUsd` null means unknown. */
export interface Charge {
  microUsd: number | null;
  source: string;
}

export interface ProviderAdapter {
  readonly id: ProviderId;
  readonly displayName: string;
  /** Secrets the adapter made or holds beyond its configuration (E's access tokens): redacted like keys. */
  secrets?(): string[];
  /** Models (and operations) this adapter knows, for help text and `quote`. */
  models(): string[];
  /** How model identifiers are formed, for a provider whose spec publishes no fixed list (`mediagate models` prints it). */
  readonly modelNaming?: string;
  /**
   * Fetches what `validate` needs from the provider (B's catalog record with
   * its input_schema), cached by the adapter. Called before `validate` when present.
   */
  prefetch?(request: JobRequest, context: CallContext): Promise<void>;
  /**
   * Maps a common request (issue 11) onto this provider's native request for
   * one of its models, or names each common field the model cannot honour.
   * Pure, like `validate`, which checks the result next (after the caller
   * merges `provider_options.<p>` over the mapped fields; the request is given
   * with them, so a provider may count its own keys toward required fields).
   * Absent: the provider takes native requests only.
   */
  fromCommon?(request: CommonRequest, target: CommonTarget): CommonMapping<JobRequest>;
  /** What `fromCommon` honours for `model` (`mediagate models`), without asking the provider; null when the model takes no common request. */
  commonCapabilities?(model: string): CommonCapabilities | null;
  /** Throws InputError(field, reason, allowed). Pure: no I/O (what it needs was fetched by `prefetch`). */
  validate(request: JobRequest): ValidatedRequest;
  /** The context is given when the estimate comes from the provider (B's quote). */
  estimate(request: ValidatedRequest, context?: CallContext): Promise<Estimate>;
  /**
   * Its slot pools depend on the request's model and operation only: a store claiming a job in place of one another
   * engine took first gives it the pools of the job asked for when the two share them (`ClaimInstead.sameAs`).
   */
  limits(request: ValidatedRequest): ProviderLimits;
  /** Sends the submit. Throws ProviderError (with retryable/backpressure/haltsProvider) or OutcomeUnknownError. */
  submit(request: ValidatedRequest, context: CallContext): Promise<Submitted>;
  poll(submitted: Submitted, context: CallContext): Promise<ProviderStatus>;
  /** Cancels at the provider. Absent when the provider publishes no cancel operation. */
  cancel?(submitted: Submitted, context: CallContext): Promise<void>;
  /** Present when the provider can notify us; `mediagate serve` routes `/webhooks/{provider}` here. */
  webhooks?: WebhookSupport;
  /** Present when the provider settles the charge after the job ends; replaces `charge` for finished jobs. */
  settle?(submitted: Submitted, outcome: ProviderStatus, context: CallContext): Promise<Settlement>;
  /** The charge of a finished job, where the provider does not report one (priced by formula). */
  charge(request: ValidatedRequest, outcome: ProviderStatus): Charge;
}
