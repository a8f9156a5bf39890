import type { Clock } from "../../core/clock.js";
import type { APlan } from "./accounts.js";
import type { ATaskRequest } from "./request.js";

/** spec A task status: the six values. */
export type AStatus = "queued" | "running" | "cancelled" | "succeeded" | "failed" | "expired";
/** How a task ends if nobody cancels it. "expired" is not explained by the spec; the sandbox only produces it on request. */
export type AOutcome = "succeeded" | "failed" | "expired";

/** spec A Limits: the task lookup window is the most recent 7 days. */
export const TASK_LOOKUP_WINDOW_MS = 7 * 24 * 3_600_000;
/** spec A Limits: a cancelled record disappears after 24 hours. */
export const CANCELLED_RETENTION_MS = 24 * 3_600_000;

export interface ATaskRecord {
  id: string;
  apiKey: string;
  plan: APlan;
  request: ATaskRequest;
  /** Virtual times (ms). The status is derived from them on every read, so clock.advance() moves tasks. */
  createdAt: number;
  runningAt: number;
  finishedAt: number;
  outcome: AOutcome;
  cancelledAt?: number;
  /** Token count reported in `usage` on success. */
  completionTokens: number;
  /** The signed result URL, made once so every read returns the same link and lifetime. */
  resultUrl?: string;
  downloads: number;
}

export function statusAt(task: ATaskRecord, now: number): AStatus {
  if (task.cancelledAt !== undefined) return "cancelled";
  if (now < task.runningAt) return "queued";
  if (now < task.finishedAt) return "running";
  return task.outcome;
}

export function isTerminal(status: AStatus): boolean {
  return status !== "queued" && status !== "running";
}

/** When a stored task stops existing: 7 days after creation, or 24 hours after cancellation if sooner. */
export function goneAt(task: ATaskRecord): number {
  const lookupEnd = task.createdAt + TASK_LOOKUP_WINDOW_MS;
  return task.cancelledAt === undefined ? lookupEnd : Math.min(lookupEnd, task.cancelledAt + CANCELLED_RETENTION_MS);
}

export type ACancelResult = "cancelled" | "not_found" | "not_queued";

export class ATaskStore {
  private readonly byId = new Map<string, ATaskRecord>();

  constructor(private readonly clock: Clock) {}

  add(task: ATaskRecord): void {
    this.byId.set(task.id, task);
  }

  /** A task that still exists (spec A: older than 7 days, or cancelled over 24 h ago, means the id no longer exists). */
  find(id: string): ATaskRecord | undefined {
    const task = this.byId.get(id);
    if (!task) return undefined;
    if (this.clock.now() >= goneAt(task)) {
      this.byId.delete(id);
      return undefined;
    }
    return task;
  }

  all(): ATaskRecord[] {
    return [...this.byId.keys()].flatMap((id) => this.find(id) ?? []);
  }

  clear(): void {
    this.byId.clear();
  }

  /** spec A task status: only a queued task can be cancelled. */
  cancel(id: string): ACancelResult {
    const task = this.find(id);
    if (!task) return "not_found";
    const now = this.clock.now();
    if (statusAt(task, now) !== "queued") return "not_queued";
    task.cancelledAt = now;
    return "cancelled";
  }
}
