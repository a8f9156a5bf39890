import type { Job, JobState } from "../core/job.js";
import type { StoreContext } from "./context.js";
import { rowToJob } from "./rows.js";

/**
 * Reads of one batch's jobs in one state, a page at a time, along
 * `jobs_batch_queue` (batch_id, state, provider, next_attempt_at, id): the
 * page's rows only, in the index's order, whatever the size of the batch.
 * A tenant's only when `tenant` is given (a batch is one tenant's: the
 * check discards nothing of its own).
 */
export async function batchJobsInState(context: StoreContext, batchId: string, state: JobState, limit: number, tenant?: string): Promise<Job[]> {
  let query = context.db.selectFrom("jobs").selectAll().where("batch_id", "=", batchId).where("state", "=", state);
  if (tenant !== undefined) query = query.where("tenant", "=", tenant);
  const rows = await query.orderBy("provider").orderBy("next_attempt_at").orderBy("id").limit(limit).execute();
  return rows.map(rowToJob);
}
