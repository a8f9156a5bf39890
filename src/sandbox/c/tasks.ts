import type { CSubmitRequest } from "./request.js";

/** spec C result status: 5 generating, 1 success, 6 deleted, 7 moderation failure, 8 generation failure. */
export type CStatus = 1 | 5 | 6 | 7 | 8;
export type COutcome = 1 | 7 | 8;

/** spec C: a task unfinished after ten minutes has its slot released automatically. */
export const SLOT_RELEASE_MS = 10 * 60_000;

export interface CTaskRecord {
  videoId: string;
  apiKey: string;
  request: CSubmitRequest;
  costCredits: number;
  /** Virtual times (ms); status, slot and refund are derived from them on every read. */
  createdAt: number;
  finishedAt: number;
  outcome: COutcome;
  deletedAt?: number;
  /** The signed result URL, made once so every read returns the same link and lifetime. */
  resultUrl?: string;
  downloads: number;
}

export function statusAt(task: CTaskRecord, now: number): CStatus {
  if (task.deletedAt !== undefined && now >= task.deletedAt) return 6;
  if (now < task.finishedAt) return 5;
  return task.outcome;
}

/**
 * spec C Limits 2-3: a task holds its slot while generating, and for at most
 * ten minutes. The status after the automatic release is not shown: the
 * sandbox keeps answering 5 and lets the task finish later as planned.
 */
export function holdsSlotAt(task: CTaskRecord, now: number): boolean {
  return statusAt(task, now) === 5 && now < task.createdAt + SLOT_RELEASE_MS;
}

/** When the task left status 5 (finished or deleted), or undefined while it is still generating. */
export function finishedAtOrUndefined(task: CTaskRecord, now: number): number | undefined {
  const status = statusAt(task, now);
  if (status === 5) return undefined;
  if (status === 6 && task.deletedAt !== undefined && task.deletedAt < task.finishedAt) return task.deletedAt;
  return task.finishedAt;
}

/** spec C: moderation failure refunds the credits (once the task has reached status 7). */
export function isRefundedAt(task: CTaskRecord, now: number): boolean {
  const endedBeforeDeletion = task.deletedAt === undefined || task.deletedAt >= task.finishedAt;
  return task.outcome === 7 && now >= task.finishedAt && endedBeforeDeletion;
}
