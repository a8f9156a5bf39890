import type { Clock } from "../core/clock.js";
import type { Job } from "../core/job.js";
import type { JobScope, Store } from "../store/store.js";
import type { EngineLogger } from "./logger.js";

/** Past-deadline jobs cancelled a look; a look that fills it looks again at once. */
const PAGE = 200;
/** How often the queue's deadlines are looked at (besides the check at each claim). */
export const DEADLINE_LOOK_EVERY_MS = 1_000;

/** The words a job cancelled by its deadline carries (its reason, its error's message). */
export function deadlineWords(deadlineAt: number, sent: boolean): string {
  const at = new Date(deadlineAt).toISOString();
  return sent ? `its deadline (${at}) passed while it ran at the provider` : `its deadline (${at}) passed before it was sent; nothing was sent or charged`;
}

export interface DeadlineParts {
  store: Store;
  clock: Clock;
  log: EngineLogger;
  scope: () => JobScope | null;
  emit: (job: Job) => void;
}

/**
 * Cancels the queued jobs whose deadline (`cancel_after_s`) has passed,
 * never sent: each by a compare-and-set from `queued` (a job claimed
 * meanwhile is the claim's to judge, in `submitJob`). Read by the index of
 * deadlines, a page at a time: the queue's length costs nothing.
 */
export async function cancelPastDeadline(parts: DeadlineParts, now: number): Promise<number> {
  let cancelled = 0;
  for (;;) {
    const due = await parts.store.queuedPastDeadline(now, PAGE, parts.scope());
    for (const job of due) {
      const words = deadlineWords(job.deadlineAt!, false);
      const moved = await parts.store.transition(job.id, { state: "queued" }, "cancelled", { reason: words, error: { code: "deadline", message: words } }, words, parts.clock.now(), { deadline_at: new Date(job.deadlineAt!).toISOString() });
      if (moved) {
        cancelled++;
        parts.emit(moved);
      }
    }
    if (due.length < PAGE) break;
  }
  if (cancelled > 0) parts.log.info({ cancelled }, "jobs past their deadline cancelled before they were sent");
  return cancelled;
}
