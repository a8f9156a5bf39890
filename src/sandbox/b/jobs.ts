import type { BOperation } from "./operation.js";

/** spec B Job status. */
export type BJobStatus = "queued" | "running" | "completed" | "failed";

/** spec B Billing state (on a finished job). */
export type BBillingState = "pending" | "unavailable" | "settled";

export interface BJobError {
  code: string;
  message: string;
}

/** How a job ends, decided at submit; times are virtual ms. */
export type BJobOutcome = { kind: "completed" } | { kind: "failed"; error: BJobError };

export interface BJobRecord {
  id: string;
  apiKey: string;
  operation: BOperation;
  /** The body as received minus webhook_url; prompts are removed from it by DELETE. */
  body: Record<string, unknown>;
  /** Canonical JSON of operation and whole body, compared on Idempotency-Key replays (kept after DELETE). */
  fingerprint: string;
  idempotencyKey: string | null;
  webhookUrl: string | null;
  createdAt: number;
  /** Queued until then, running after (equal to createdAt for a submission rejected at once). */
  startsAt: number;
  finishesAt: number;
  outcome: BJobOutcome;
  /** True when the submission itself was refused (the job was failed from the start). */
  rejectedAtSubmit: boolean;
  /** What the job costs if it completes; charged only then (spec B: failed generations are not charged). */
  priceMicroUsd: number;
  /** Billing timing, fixed at submit from the options then in force. */
  settlementDelayMs: number;
  billingUnavailableMs: number;
  seed: number;
  deletedAt: number | null;
  reads: number;
}

export function statusAt(job: BJobRecord, now: number): BJobStatus {
  if (job.rejectedAtSubmit || now >= job.finishesAt) return job.outcome.kind;
  return now >= job.startsAt ? "running" : "queued";
}

export function isFinishedAt(job: BJobRecord, now: number): boolean {
  return job.rejectedAtSubmit || now >= job.finishesAt;
}

/** When the charge becomes final (and is taken from the balance). */
export function settledAt(job: BJobRecord): number {
  return job.finishesAt + job.settlementDelayMs + job.billingUnavailableMs;
}

/** The final charge: the price when the job completed, 0 when it failed (spec B Billing object). */
export function chargeMicroUsd(job: BJobRecord): number {
  return job.outcome.kind === "completed" ? job.priceMicroUsd : 0;
}

/** null while the job is not finished (spec B: "A null billing is not a charge"). */
export function billingStateAt(job: BJobRecord, now: number): BBillingState | null {
  if (!isFinishedAt(job, now)) return null;
  if (now < job.finishesAt + job.settlementDelayMs) return "pending";
  if (now < settledAt(job)) return "unavailable";
  return "settled";
}

/** A job whose charge is not yet final and may still be taken (the balance check reserves it). */
export function isReservingAt(job: BJobRecord, now: number): boolean {
  return !job.rejectedAtSubmit && now < settledAt(job);
}
