import type { Job } from "../core/job.js";
import type { StoreContext } from "./context.js";
import { rowToJob } from "./rows.js";
import type { JobScope } from "./store.js";
import { inScope } from "./scope.js";

/**
 * Queued jobs whose deadline has passed (`cancel_after_s`), earliest first,
 * at most `limit`: one range of `jobs_deadline` (migration 20), whatever the
 * length of the queue. Only those in `scope` when given (a command's own).
 */
export async function queuedPastDeadline(context: StoreContext, now: number, limit: number, scope: JobScope | null = null): Promise<Job[]> {
  let query = context.db.selectFrom("jobs").selectAll().where("state", "=", "queued").where("deadline_at", "is not", null).where("deadline_at", "<=", now);
  if (scope) query = query.where((eb) => inScope(eb, scope));
  const rows = await query.orderBy("deadline_at").orderBy("id").limit(limit).execute();
  return rows.map(rowToJob);
}
