import { type Compilable, type SqlBool, sql } from "kysely";
import type { Job } from "../core/job.js";
import type { ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";
import { literalLimit } from "./reusable.js";
import { rowToJob } from "./rows.js";

/**
 * Fair share (issue 35): when a provider's slot or rate token frees, the
 * next job comes from the tenant with the least of that provider in flight
 * (submitting or running), in proportion to its token's weight; among
 * equals, the tenant whose first due job has waited longest; never simply
 * from the oldest job in the store, which made one tenant's 480 jobs a queue
 * every other tenant waited behind. In flight is counted from the store, so
 * several engines on one PostgreSQL store share one idea of it.
 *
 * Flat in the queue's length: the tenants with queued jobs are found by
 * walking the distinct tenants of `jobs_tenant_queue` (migration 19), an
 * index seek each (a skip scan: the next tenant after the last, never the
 * jobs between); each tenant's first due jobs are a range of the same
 * index; what is in flight is a count of the jobs in flight (bounded by the
 * providers' slots), never of the waiting ones. A provider with one tenant
 * waiting (a single team, a CLI command's batch) is read in due order as
 * before.
 */

/** The tenant as jobs_tenant_queue compares it (migration 19): as "C" on PostgreSQL, where no other index then fits. */
function tenantColumn(context: StoreContext) {
  return context.dialect === "postgres" ? sql<string>`tenant collate "C"` : sql<string>`tenant`;
}

/** What decides one tenant's turn at one provider. */
interface TenantQueue {
  provider: ProviderId;
  tenant: string;
  inFlight: number;
  weight: number;
  /** Its first due jobs, in due order. */
  jobs: Job[];
}

/** The tenants with queued jobs at each of `providers`: a skip scan of jobs_tenant_queue per provider, in one statement. */
export async function queuedTenants(context: StoreContext, providers: readonly ProviderId[]): Promise<Array<{ provider: ProviderId; tenant: string }>> {
  const rows = await context.reusable<{ provider: ProviderId; tenant: string }>(
    context.db,
    `queuedTenants:${providers.join("")}`,
    (slot) => {
      // One recursive walk per provider: from before every tenant (''), the least tenant after the last one found, each
      // the first entry of a range of jobs_tenant_queue (state, provider, tenant > the last): always that shape, and its
      // order written out in full, so that no planner reads another index (tenant and ref) and filters its rows instead.
      const tenant = tenantColumn(context);
      const walks = providers.map((provider, index) => {
        const walk = sql.raw(`t_${provider}`);
        const next = sql`(select tenant from jobs where state = 'queued' and provider = ${slot<string>(`p${index}`)} and ${tenant} > ${walk}.tenant order by state, provider, ${tenant} limit 1)`;
        return sql`${walk}(tenant) as (select cast('' as text) union all select ${next} from ${walk} where ${walk}.tenant is not null)`;
      });
      const reads = providers.map((provider, index) => sql`select ${slot<string>(`p${index}`)} as provider, tenant from ${sql.raw(`t_${provider}`)} where tenant is not null and tenant <> ''`);
      const statement = sql`with recursive ${sql.join(walks)} ${sql.join(reads, sql` union all `)}`;
      return { compile: () => statement.compile(context.db) } as Compilable<never>;
    },
    Object.fromEntries(providers.map((provider, index) => [`p${index}`, provider])),
  );
  return rows.map((row) => ({ provider: row.provider, tenant: row.tenant }));
}

/** How many jobs of each of these tenants are in flight at each provider: the in-flight jobs counted, not the waiting ones. */
export async function inFlight(context: StoreContext, providers: readonly ProviderId[]): Promise<Map<string, number>> {
  // The states written into the statement: a plan made for any bound states (PostgreSQL's generic plan) would not know
  // that these two are the few jobs in flight, and read another index.
  const rows = await context.db
    .selectFrom("jobs")
    .select((eb) => ["provider", "tenant", eb.fn.countAll<number>().as("n")])
    .where(sql<SqlBool>`state in ('submitting', 'running')`)
    .where("provider", "in", [...providers])
    .groupBy(["provider", "tenant"])
    .execute();
  return new Map(rows.map((row) => [`${row.provider}\u0000${row.tenant}`, Number(row.n)]));
}

/** Each tenant's weight: its token's (default 1); the local operator's 1. */
export async function weights(context: StoreContext, tenants: readonly string[]): Promise<Map<string, number>> {
  const rows = await context.db.selectFrom("api_tokens").select(["id", "weight"]).where("id", "in", [...tenants]).execute();
  return new Map(rows.map((row) => [row.id, Math.max(1, Number(row.weight))]));
}

/** Each (provider, tenant)'s first `limit` due jobs, in due order: one range of jobs_tenant_queue each, in one statement. */
async function heads(context: StoreContext, pairs: ReadonlyArray<{ provider: ProviderId; tenant: string }>, now: number, limit: number): Promise<Job[]> {
  const rows = await context.reusable(
    context.db,
    `tenantHeads:${pairs.length}:${limit}`,
    (slot) => {
      const branch = (index: number) =>
        context.db.selectFrom(
          context.db
            .selectFrom("jobs")
            .selectAll()
            .where("state", "=", "queued")
            .where("provider", "=", slot<string>(`p${index}`))
            .where(tenantColumn(context), "=", slot<string>(`t${index}`))
            .where("next_attempt_at", "<=", slot<number>("now"))
            .orderBy("next_attempt_at")
            .orderBy("id")
            .limit(literalLimit(limit))
            .as(`head_${index}`),
        ).selectAll();
      let all = branch(0);
      for (let index = 1; index < pairs.length; index++) all = all.unionAll(branch(index));
      return all;
    },
    { now, ...Object.fromEntries(pairs.flatMap((pair, index) => [[`p${index}`, pair.provider], [`t${index}`, pair.tenant]])) },
  );
  return rows.map(rowToJob);
}

/**
 * The due queued jobs of `providers` in fair order, at most `limit`; null when no provider has more than one tenant
 * waiting, so that due order (the caller's own read) is fair already.
 */
export async function fairDueQueued(context: StoreContext, now: number, limit: number, providers: readonly ProviderId[]): Promise<Job[] | null> {
  const waiting = await queuedTenants(context, providers);
  const shared = new Set<ProviderId>();
  const seen = new Set<ProviderId>();
  for (const { provider } of waiting) {
    if (seen.has(provider)) shared.add(provider);
    seen.add(provider);
  }
  if (shared.size === 0) return null;
  const [flights, weighted, due] = await Promise.all([inFlight(context, [...seen]), weights(context, [...new Set(waiting.map((pair) => pair.tenant))]), heads(context, waiting, now, limit)]);
  const queues = new Map<string, TenantQueue>();
  for (const pair of waiting) {
    const key = `${pair.provider}\u0000${pair.tenant}`;
    queues.set(key, { ...pair, inFlight: flights.get(key) ?? 0, weight: weighted.get(pair.tenant) ?? 1, jobs: [] });
  }
  for (const job of due) queues.get(`${job.provider}\u0000${job.tenant}`)?.jobs.push(job);
  return fairOrder([...queues.values()], limit);
}

/**
 * The order in which a claim should take the jobs: each job's place is what its tenant would have in flight at that
 * provider once the jobs before it of the same tenant were sent, over its weight (water filling); equal places go to
 * the job that has waited longer. So the tenant with the least in flight goes first, and tenants take turns.
 */
export function fairOrder(queues: readonly TenantQueue[], limit: number): Job[] {
  const placed: Array<{ job: Job; place: number }> = [];
  for (const queue of queues) queue.jobs.forEach((job, index) => placed.push({ job, place: (queue.inFlight + index) / queue.weight }));
  placed.sort((left, right) => left.place - right.place || left.job.nextAttemptAt - right.job.nextAttemptAt || (left.job.id < right.job.id ? -1 : left.job.id > right.job.id ? 1 : 0));
  return placed.slice(0, limit).map((entry) => entry.job);
}
