import { sql } from "kysely";
import type { ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";
import { inFlight, queuedTenants, weights } from "./fair-queue.js";
import type { QueueShape, TenantLine } from "./store.js";

/** A provider's lines are read for at most this many tenants waiting there: a position counts the others' jobs from these. */
export const QUEUE_SHAPE_TENANTS = 200;

/**
 * Each provider's queue as its tenants' lines (issue 37, queue positions):
 * the tenants waiting by the skip scan fair share walks, each line's head
 * and tail rank by two seeks of `jobs_queue_rank` (migration 21), and what
 * is in flight by a count of the jobs in flight. Flat in the number of
 * jobs queued: a few index seeks per tenant waiting.
 */
export async function queueShapes(context: StoreContext, providers: readonly ProviderId[]): Promise<QueueShape[]> {
  if (providers.length === 0) return [];
  const waiting = await queuedTenants(context, providers);
  const kept: Array<{ provider: ProviderId; tenant: string }> = [];
  const perProvider = new Map<ProviderId, number>();
  for (const pair of waiting) {
    const count = perProvider.get(pair.provider) ?? 0;
    if (count >= QUEUE_SHAPE_TENANTS) continue;
    perProvider.set(pair.provider, count + 1);
    kept.push(pair);
  }
  const [ranks, flights, weighted] = await Promise.all([
    lineEnds(context, kept),
    inFlight(context, providers),
    kept.length > 0 ? weights(context, [...new Set(kept.map((pair) => pair.tenant))]) : Promise.resolve(new Map<string, number>()),
  ]);
  return providers.map((provider) => {
    const lines: TenantLine[] = [];
    for (const pair of kept) {
      if (pair.provider !== provider) continue;
      const ends = ranks.get(`${provider}\u0000${pair.tenant}`);
      if (!ends) continue;
      lines.push({ tenant: pair.tenant, headRank: ends.head, headDueAt: ends.headDueAt, tailRank: ends.tail, inFlight: flights.get(`${provider}\u0000${pair.tenant}`) ?? 0, weight: weighted.get(pair.tenant) ?? 1 });
    }
    let total = 0;
    for (const [key, count] of flights) if (key.startsWith(`${provider}\u0000`)) total += count;
    return { provider, lines, inFlight: total };
  });
}

/**
 * The first and last rank queued of each (provider, tenant), and when the
 * first is due: seeks of jobs_queue_rank (budget-held jobs are not in it,
 * migration 21), in one statement.
 */
async function lineEnds(context: StoreContext, pairs: ReadonlyArray<{ provider: ProviderId; tenant: string }>): Promise<Map<string, { head: number; headDueAt: number; tail: number }>> {
  const ends = new Map<string, { head: number; headDueAt: number; tail: number }>();
  if (pairs.length === 0) return ends;
  const end = (provider: string, tenant: string, column: "queue_rank" | "next_attempt_at", direction: "asc" | "desc") =>
    sql<number>`(select ${sql.ref(column)} from jobs where state = 'queued' and provider = ${provider} and tenant = ${tenant} and queue_rank is not null and blocked_code is null order by state, provider, tenant, queue_rank ${sql.raw(direction)} limit 1)`;
  const branches = pairs.map(
    (pair) =>
      sql`select cast(${pair.provider} as text) as provider, cast(${pair.tenant} as text) as tenant, ${end(pair.provider, pair.tenant, "queue_rank", "asc")} as head, ${end(pair.provider, pair.tenant, "next_attempt_at", "asc")} as head_due_at, ${end(pair.provider, pair.tenant, "queue_rank", "desc")} as tail`,
  );
  const rows = await sql<{ provider: string; tenant: string; head: number | string | null; head_due_at: number | string | null; tail: number | string | null }>`${sql.join(branches, sql` union all `)}`.execute(context.db);
  for (const row of rows.rows) {
    if (row.head === null || row.tail === null) continue;
    ends.set(`${row.provider}\u0000${row.tenant}`, { head: Number(row.head), headDueAt: Number(row.head_due_at), tail: Number(row.tail) });
  }
  return ends;
}
