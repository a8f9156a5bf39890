import { sql } from "kysely";
import type { BlockedCode, Job, JobState } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";
import { literalLimit } from "./reusable.js";
import { toNumber, toNumberOrNull } from "./rows.js";
import { IDS_PER_STATEMENT, inScope, scopeParts } from "./scope.js";
import type { JobBrief, JobCount, JobOutcome, JobScope, OpenCount } from "./store.js";

/** What following and summing up jobs reads: a few columns of each, or counts, never whole rows. */

function briefOf(row: { id: string; state: string; provider: string; blocked_code: string | null; updated_at: number }): JobBrief {
  return {
    id: row.id,
    state: row.state as JobState,
    provider: row.provider as ProviderId,
    blockedCode: row.blocked_code as BlockedCode | null,
    updatedAt: Number(row.updated_at),
  };
}

const OPEN_STATES: JobState[] = ["queued", "submitting", "running", "capturing"];

export async function jobBriefs(context: StoreContext, scope: JobScope): Promise<JobBrief[]> {
  const briefs: JobBrief[] = [];
  for (const part of scopeParts(scope)) {
    const rows = await context.db
      .selectFrom("jobs")
      .select(["id", "state", "provider", "blocked_code", "updated_at"])
      .where((eb) => inScope(eb, part))
      .execute();
    for (const row of rows) briefs.push(briefOf(row));
  }
  return briefs;
}

export async function jobOutcomes(context: StoreContext, ids: readonly string[]): Promise<JobOutcome[]> {
  if (ids.length === 0) return [];
  if (ids.length > IDS_PER_STATEMENT) throw new Error(`jobOutcomes reads at most ${IDS_PER_STATEMENT} jobs a call`);
  const rows = await context.db
    .selectFrom("jobs")
    .select(["id", "ref", "state", "reason", "attempts", "provider_job_id", "estimate_micro_usd", "charge_micro_usd", "charge_state", "blocked_code", "error_code", "error_message"])
    .where("id", "in", [...ids])
    .execute();
  return rows.map((row) => ({
    id: row.id,
    ref: row.ref,
    state: row.state as JobState,
    reason: row.reason,
    attempts: toNumber(row.attempts),
    providerJobId: row.provider_job_id,
    estimateMicroUsd: toNumberOrNull(row.estimate_micro_usd),
    chargeMicroUsd: toNumberOrNull(row.charge_micro_usd),
    chargeState: row.charge_state as Job["chargeState"],
    blockedCode: (row.blocked_code as Job["blockedCode"]) ?? null,
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? "" } : null,
  }));
}

export async function changedBriefs(context: StoreContext, scope: JobScope, since: number, limit: number, after: { updatedAt: number; id: string } | null = null): Promise<JobBrief[]> {
  const briefs: JobBrief[] = [];
  for (const part of scopeParts(scope)) {
    let query = context.db
      .selectFrom("jobs")
      .select(["id", "state", "provider", "blocked_code", "updated_at"])
      .where((eb) => inScope(eb, part))
      .where("updated_at", ">=", since);
    if (after) {
      query = query.where((eb) => eb.or([eb("updated_at", ">", after.updatedAt), eb.and([eb("updated_at", "=", after.updatedAt), eb("id", ">", after.id)])]));
    }
    const rows = await query.orderBy("updated_at").orderBy("id").limit(literalLimit(limit)).execute();
    for (const row of rows) briefs.push(briefOf(row));
  }
  return briefs.sort((left, right) => left.updatedAt - right.updatedAt || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0)).slice(0, limit);
}

export async function openCounts(context: StoreContext, scope: JobScope): Promise<OpenCount[]> {
  const counts: OpenCount[] = [];
  for (const part of scopeParts(scope)) {
    const rows = await context.db
      .selectFrom("jobs")
      .select((eb) => ["state", "provider", eb("blocked_code", "is not", null).as("blocked"), eb.fn.countAll<number>().as("n")])
      .where((eb) => inScope(eb, part))
      .where("state", "in", OPEN_STATES)
      .groupBy(["state", "provider", sql`blocked_code is not null`])
      .execute();
    for (const row of rows) {
      counts.push({ state: row.state as JobState, provider: row.provider as ProviderId, blocked: Boolean(Number(row.blocked)), count: Number(row.n) });
    }
  }
  return counts;
}

export async function jobCounts(context: StoreContext): Promise<JobCount[]> {
  // Grouped in the order of jobs_queue (state, provider, …), which holds both columns: the count walks that index alone.
  const rows = await context.db
    .selectFrom("jobs")
    .select((eb) => ["state", "provider", eb.fn.countAll<number>().as("n")])
    .groupBy(["state", "provider"])
    .execute();
  return rows.map((row) => ({ state: row.state as JobState, provider: row.provider as ProviderId, count: Number(row.n) }));
}
