import type { JobEvent, JobState } from "../core/job.js";
import type { Db, StoreContext } from "./context.js";
import { getJob } from "./jobs.js";
import { eventRow } from "./rows.js";

/** A job's event log: every change of state and every note, in order. */

export async function events(context: StoreContext, jobId: string): Promise<JobEvent[]> {
  const rows = await context.db.selectFrom("job_events").selectAll().where("job_id", "=", jobId).orderBy("id").execute();
  return rows.map((row) => ({
    id: Number(row.id),
    jobId: row.job_id,
    at: Number(row.at),
    fromState: row.from_state as JobState | null,
    toState: row.to_state as JobState,
    reason: row.reason,
    detail: row.detail_json ? (JSON.parse(row.detail_json) as unknown) : null,
  }));
}

export async function noteEvent(context: StoreContext, jobId: string, reason: string, now: number, detail?: unknown): Promise<void> {
  const job = await getJob(context, jobId);
  if (!job) return;
  await appendEvent(context, context.db, jobId, now, job.state, job.state, reason, detail);
}

async function appendEvent(
  context: StoreContext,
  trx: Db,
  jobId: string,
  at: number,
  fromState: JobState | null,
  toState: JobState,
  reason: string,
  detail?: unknown,
): Promise<void> {
  await appendEventRow(context, trx, eventRow(jobId, at, fromState, toState, reason, detail));
}

export async function appendEventRow(context: StoreContext, trx: Db, row: ReturnType<typeof eventRow>): Promise<void> {
  await context.reusable(trx, "appendEvent", (slot) => trx.insertInto("job_events").values({
    job_id: slot<string>("job_id"),
    at: slot<number>("at"),
    from_state: slot<string | null>("from_state"),
    to_state: slot<string>("to_state"),
    reason: slot<string>("reason"),
    detail_json: slot<string | null>("detail_json"),
  }), row);
}
