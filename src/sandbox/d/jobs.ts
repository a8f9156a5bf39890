import type { DEndpointId } from "./endpoints.js";
import type { DSubmitRequest } from "./validation.js";

/**
 * spec D job status: `Ready` ends polling; a client example treats `Error`
 * and `Failed` as terminal failure; the full set is not shown. The sandbox's
 * own pending value is `Pending`; other values are only ever injected.
 */
export type DJobOutcome = "Ready" | "Error" | "Failed";
export type DJobStatus = "Pending" | DJobOutcome;

export interface DJobRecord {
  id: string;
  endpoint: DEndpointId;
  apiKey: string;
  request: DSubmitRequest;
  /** The seed drawn on (the given one, or one the sandbox picked). */
  seed: number;
  chargeMicroUsd: number;
  /** Virtual times (ms). Status is derived from them on every read. */
  createdAt: number;
  /** When rendering ends and the job reaches its outcome. */
  finishesAt: number;
  outcome: DJobOutcome;
  /** An injected unknown status and how many more polls get it. */
  unknownStatus?: { status: string; pollsLeft: number };
  /** The signed result URL, made once (valid from the moment the job became Ready). */
  sampleUrl?: string;
  polls: number;
  downloads: number;
}

export function statusAt(job: DJobRecord, now: number): DJobStatus {
  return now < job.finishesAt ? "Pending" : job.outcome;
}

/** spec D Limits "Concurrent tasks": a task is active from submit until it is Ready, Error or Failed. */
export function isActiveAt(job: DJobRecord, now: number): boolean {
  return now < job.finishesAt;
}

/** The virtual time the job became Ready, or null while it renders or when it failed. */
export function readyAtOrNull(job: DJobRecord, now: number): number | null {
  return job.outcome === "Ready" && now >= job.finishesAt ? job.finishesAt : null;
}
