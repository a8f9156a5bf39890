import { sql } from "kysely";
import type { JobState } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";

/** What was spent: the ledger's charges (the accounting fact) beside the estimates of the jobs created, summed up. */

export interface BatchSummary {
  jobs: number;
  byState: Partial<Record<JobState, number>>;
  estimateMicroUsd: number;
  unpriced: number;
  chargedMicroUsd: number;
}

export interface SpendLine {
  provider: ProviderId;
  model: string;
  tokenId: string | null;
  settledMicroUsd: number;
  /** The estimates of the priced jobs created in the period: an unpriced job adds nothing here, it is counted in `unpricedJobs`. */
  estimatedMicroUsd: number;
  jobs: number;
  /** Jobs created in the period without an estimate (the provider publishes no price): unpriced, not free. */
  unpricedJobs: number;
}

/** One provider's spend on one UTC day: the ledger's charges that day beside the estimates of the jobs created that day. */
export interface DailySpend {
  /** The day's first millisecond (UTC). */
  day: number;
  provider: ProviderId;
  settledMicroUsd: number;
  estimatedMicroUsd: number;
  /** Jobs created that day without an estimate: unpriced, not free. */
  unpricedJobs: number;
}

/** A UTC day in ms: spend is counted by day since the epoch. */
const DAY_MS = 86_400_000;

export async function ledgerTotal(context: StoreContext, filter: { provider?: ProviderId; from?: number; to?: number } = {}): Promise<number> {
  let query = context.db.selectFrom("ledger").select((eb) => eb.fn.sum<number>("micro_usd").as("total"));
  if (filter.provider) query = query.where("provider", "=", filter.provider);
  if (filter.from !== undefined) query = query.where("at", ">=", filter.from);
  if (filter.to !== undefined) query = query.where("at", "<=", filter.to);
  const row = await query.executeTakeFirst();
  return Number(row?.total ?? 0);
}

export async function batchSummary(context: StoreContext, batchId: string, tenant?: string): Promise<BatchSummary> {
  let query = context.db
    .selectFrom("jobs")
    .select([
      "state",
      (eb) => eb.fn.countAll<number>().as("n"),
      (eb) => eb.fn.sum<number>("estimate_micro_usd").as("estimate"),
      (eb) => eb.fn.sum<number>(eb.case().when("estimate_micro_usd", "is", null).then(1).else(0).end()).as("unpriced"),
      (eb) => eb.fn.sum<number>("charge_micro_usd").as("charged"),
    ])
    .where("batch_id", "=", batchId);
  if (tenant !== undefined) query = query.where("tenant", "=", tenant);
  const rows = await query.groupBy("state").execute();
  const summary: BatchSummary = { jobs: 0, byState: {}, estimateMicroUsd: 0, unpriced: 0, chargedMicroUsd: 0 };
  for (const row of rows) {
    const count = Number(row.n);
    summary.jobs += count;
    summary.byState[row.state as JobState] = count;
    summary.estimateMicroUsd += Number(row.estimate ?? 0);
    summary.unpriced += Number(row.unpriced ?? 0);
    summary.chargedMicroUsd += Number(row.charged ?? 0);
  }
  return summary;
}

export async function spendSummary(context: StoreContext, from: number, to: number, tenant?: string): Promise<SpendLine[]> {
  let settled = context.db
    .selectFrom("ledger")
    .innerJoin("jobs", "jobs.id", "ledger.job_id")
    .select(["ledger.provider", "ledger.model", "jobs.token_id", (eb) => eb.fn.sum<number>("ledger.micro_usd").as("total")])
    .where("ledger.at", ">=", from)
    .where("ledger.at", "<", to);
  if (tenant !== undefined) settled = settled.where("jobs.tenant", "=", tenant);
  let estimated = context.db
    .selectFrom("jobs")
    .select([
      "provider",
      "model",
      "token_id",
      (eb) => eb.fn.sum<number>("estimate_micro_usd").as("total"),
      (eb) => eb.fn.countAll<number>().as("n"),
      (eb) => eb.fn.sum<number>(eb.case().when("estimate_micro_usd", "is", null).then(1).else(0).end()).as("unpriced"),
    ])
    .where("created_at", ">=", from)
    .where("created_at", "<", to);
  if (tenant !== undefined) estimated = estimated.where("tenant", "=", tenant);
  const lines = new Map<string, SpendLine>();
  const lineOf = (provider: string, model: string, token: string | null) => {
    const key = JSON.stringify([provider, model, token]);
    let line = lines.get(key);
    if (!line) lines.set(key, (line = { provider: provider as ProviderId, model, tokenId: token, settledMicroUsd: 0, estimatedMicroUsd: 0, jobs: 0, unpricedJobs: 0 }));
    return line;
  };
  for (const row of await settled.groupBy(["ledger.provider", "ledger.model", "jobs.token_id"]).execute()) lineOf(row.provider, row.model, row.token_id).settledMicroUsd += Number(row.total ?? 0);
  for (const row of await estimated.groupBy(["provider", "model", "token_id"]).execute()) {
    const line = lineOf(row.provider, row.model, row.token_id);
    line.estimatedMicroUsd += Number(row.total ?? 0);
    line.jobs += Number(row.n);
    line.unpricedJobs += Number(row.unpriced ?? 0);
  }
  return [...lines.values()].sort((left, right) => left.provider.localeCompare(right.provider) || left.model.localeCompare(right.model) || String(left.tokenId).localeCompare(String(right.tokenId)));
}

export async function spendByDay(context: StoreContext, from: number, to: number, tenant?: string): Promise<DailySpend[]> {
  // Integer division on both dialects (SQLite INTEGER, PostgreSQL BIGINT); the literal keeps the select and group by one expression.
  const dayOf = (column: "ledger.at" | "created_at") => sql<number>`${sql.ref(column)} / ${sql.lit(DAY_MS)}`;
  let settled = context.db
    .selectFrom("ledger")
    .innerJoin("jobs", "jobs.id", "ledger.job_id")
    .select(["ledger.provider", dayOf("ledger.at").as("day"), (eb) => eb.fn.sum<number>("ledger.micro_usd").as("total")])
    .where("ledger.at", ">=", from)
    .where("ledger.at", "<", to);
  if (tenant !== undefined) settled = settled.where("jobs.tenant", "=", tenant);
  let estimated = context.db
    .selectFrom("jobs")
    .select(["provider", dayOf("created_at").as("day"), (eb) => eb.fn.sum<number>("estimate_micro_usd").as("total"), (eb) => eb.fn.sum<number>(eb.case().when("estimate_micro_usd", "is", null).then(1).else(0).end()).as("unpriced")])
    .where("created_at", ">=", from)
    .where("created_at", "<", to);
  if (tenant !== undefined) estimated = estimated.where("tenant", "=", tenant);
  const days = new Map<string, DailySpend>();
  const dayLine = (provider: string, day: number) => {
    const key = `${day}:${provider}`;
    let line = days.get(key);
    if (!line) days.set(key, (line = { day: day * DAY_MS, provider: provider as ProviderId, settledMicroUsd: 0, estimatedMicroUsd: 0, unpricedJobs: 0 }));
    return line;
  };
  for (const row of await settled.groupBy(["ledger.provider", dayOf("ledger.at")]).execute()) dayLine(row.provider, Number(row.day)).settledMicroUsd += Number(row.total ?? 0);
  for (const row of await estimated.groupBy(["provider", dayOf("created_at")]).execute()) {
    const line = dayLine(row.provider, Number(row.day));
    line.estimatedMicroUsd += Number(row.total ?? 0);
    line.unpricedJobs += Number(row.unpriced ?? 0);
  }
  return [...days.values()].sort((left, right) => left.day - right.day || left.provider.localeCompare(right.provider));
}
