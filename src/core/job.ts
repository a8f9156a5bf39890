import type { ProviderId } from "./provider-id.js";
import type { MediaFacts } from "./media-facts.js";
import type { JobTrace } from "./trace-context.js";

/**
 * Job states (DESIGN.md). Waiting for a slot, a rate token or budget is a
 * *reason* on a queued job, not a state.
 */
export const JOB_STATES = [
  "queued",
  "submitting",
  "running",
  "capturing",
  "succeeded",
  "failed",
  "cancelled",
  "expired",
  "unknown_submission",
] as const;
export type JobState = (typeof JOB_STATES)[number];

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set([
  "succeeded",
  "failed",
  "cancelled",
  "expired",
  "unknown_submission",
]);

export function isTerminal(state: JobState): boolean {
  return TERMINAL_STATES.has(state);
}

/**
 * Allowed transitions. Three moves go beyond DESIGN.md's diagram: submitting →
 * queued (the provider pushed back — D 429, C 500044 — or refused the
 * connection, so nothing was created and the job waits for a slot again; or,
 * for a common request, it refused before accepting and the job goes to the
 * next target of its route), unknown_submission → queued (only by `mediagate
 * resubmit`), and running → queued (a common request with
 * `fallback_on_failure` whose generation failed at no cost, issue 11).
 */
const TRANSITIONS: Record<JobState, readonly JobState[]> = {
  queued: ["submitting", "cancelled", "failed"],
  // submitting → cancelled: its deadline passed between its claim and its send (nothing was sent).
  submitting: ["running", "failed", "unknown_submission", "queued", "cancelled"],
  // running → queued: a routed job with fallback_on_failure whose generation failed at no cost goes to its next target.
  running: ["capturing", "failed", "cancelled", "expired", "queued"],
  capturing: ["succeeded", "failed"],
  succeeded: [],
  failed: [],
  cancelled: [],
  expired: [],
  unknown_submission: ["queued"],
};

export function canTransition(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}

export interface JobError {
  code: string;
  message: string;
  /** Raw provider detail (status, body), truncated and redacted. */
  detail?: unknown;
}

export interface JobOutput {
  index: number;
  path: string;
  url: string;
  contentType: string;
  bytes: number;
  sha256: string;
  /** What the provider said of this output (seed, alt text, …), as kept in the .json beside the file. */
  metadata: Record<string, unknown>;
  /** What the saved bytes say (width, height, a video's duration_s), where mediagate can read them. */
  media: MediaFacts;
}

/** Charge states: `computed` (by formula, for providers that report none), or B's billing states. */
export type ChargeState = "none" | "computed" | "pending" | "unavailable" | "settled";

export interface Job {
  id: string;
  ref: string;
  batchId: string | null;
  provider: ProviderId;
  model: string;
  operation: string | null;
  /** Exactly what is (or was) sent to the provider. */
  body: Record<string, unknown>;
  facts: Record<string, unknown>;
  warnings: string[];
  state: JobState;
  /** Why a job waits or why it moved ("waiting for a D slot", "provider answered Ready"). */
  reason: string | null;
  attempts: number;
  idempotencyKey: string | null;
  providerJobId: string | null;
  handles: Record<string, unknown> | null;
  providerStatus: string | null;
  estimateMicroUsd: number | null;
  estimateSource: string;
  chargeMicroUsd: number | null;
  chargeSource: string | null;
  chargeState: ChargeState;
  error: JobError | null;
  outDir: string;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  nextAttemptAt: number;
  createdAt: number;
  updatedAt: number;
  submittedAt: number | null;
  /** When the submit request started to leave (null: not sent in the current attempt). */
  submitSentAt: number | null;
  providerDoneAt: number | null;
  finishedAt: number | null;
  trackingDeadlineAt: number | null;
  /** Slot pools this job holds right now. */
  slotsHeld: string[];
  /** Elapsed ms (since submit) of the last poll that still saw the job pending: a lower bound of its render time. */
  lastPendingElapsedMs: number | null;
  /** Consecutive failed polls (reset by a successful one). */
  pollFailures: number;
  /** The budget this job's spend counts against (null: none). */
  budgetId: string | null;
  /** What it holds in that budget now: its estimate from the claim that sends it, then its known charge. */
  budgetHeldMicroUsd: number;
  /** Why this unfinished job cannot move on by itself until something changes (null: it can). */
  blockedCode: BlockedCode | null;
  /** A common request's route: where it may go next and where it went before (null: a native job). */
  route: JobRoute | null;
  /** The API token that created it (`mediagate serve`); null for jobs of the CLI and the library. */
  tokenId: string | null;
  /** Whose job it is: the creating token's id, or LOCAL_TENANT (core/tenant.ts). Its ref is unique within its tenant. */
  tenant: string;
  /** Where to tell when it ends (`notify_url`); null: MEDIAGATE_NOTIFY_URL if set, else nobody. */
  notifyUrl: string | null;
  /** When the job stops being wanted (`cancel_after_s`): not sent by then, it is cancelled (reason `deadline`); null, never. */
  deadlineAt: number | null;
  /**
   * Its place in line among its tenant's jobs queued at its provider, given
   * when it was queued (one more than the last then); null for jobs queued
   * before ranks were kept. Only differences of ranks mean anything.
   */
  queueRank: number | null;
  /** Its place in a distributed trace, stored at its admission when traces are exported (null: not traced). */
  trace: JobTrace | null;
}

/** A target of a route not tried yet: exactly what it would be sent, validated and estimated before anything was sent. */
export type RouteStep = Pick<Job, "provider" | "model" | "operation" | "body" | "facts" | "warnings" | "estimateMicroUsd" | "estimateSource"> & {
  /** As the user wrote it: `f/img-v2`. */
  name: string;
};

/** A target tried and left: which, when, and why. */
export interface RouteAttempt {
  name: string;
  provider: ProviderId;
  model: string;
  /** The provider's job id when it had accepted the job (a generation that failed, with fallback_on_failure). */
  providerJobId: string | null;
  reason: string;
  at: number;
}

export interface JobRoute {
  /** The target the job is on now. */
  current: string;
  next: RouteStep[];
  tried: RouteAttempt[];
  /** After a provider accepted the job and its generation failed, move on (never for an unknown submission). */
  fallbackOnFailure: boolean;
  /** When the current target started failing before accepting (an outage): it is left once that lasts longer than the bound. */
  failingSince: number | null;
}

/**
 * `over_budget`: sending it would pass its budget's ceiling (it stays queued, unsent).
 * `output_unwritable`: it rendered but its output folder cannot be written (it stays capturing and is retried).
 */
export type BlockedCode = "over_budget" | "output_unwritable";

export interface JobEvent {
  id: number;
  jobId: string;
  at: number;
  fromState: JobState | null;
  toState: JobState;
  reason: string;
  detail: unknown;
}
