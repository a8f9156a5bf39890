import { type Expression, type ExpressionBuilder, type SqlBool, sql } from "kysely";
import type { Job } from "../core/job.js";
import { PROVIDER_IDS, type ProviderId } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";
import { owedNotificationsIn } from "./notifications.js";
import { literalLimit } from "./reusable.js";
import { rowToJob } from "./rows.js";
import type { Database } from "./schema.js";
import { fairDueQueued } from "./fair-queue.js";
import { inScope, inScopeSlots, scopeKeyOf, scopeValuesOf } from "./scope.js";
import type { JobScope, NextDue, QueueOrder } from "./store.js";

/** The work that is due: the queue's heads, an owner's running jobs, charges to settle, and when the next comes due. */

/** Queue entries after `after` in due order (`next_attempt_at`, then id): the next page of a queue. */
function afterInQueue(eb: ExpressionBuilder<Database, "jobs">, after: { nextAttemptAt: number; id: string }): Expression<SqlBool> {
  return eb.or([eb("next_attempt_at", ">", after.nextAttemptAt), eb.and([eb("next_attempt_at", "=", after.nextAttemptAt), eb("id", ">", after.id)])]);
}

/** Lists of ids up to this long are read by a statement kept compiled for their length (a few shapes, run often). */
const REUSED_ID_LISTS = 16;

export async function dueQueued(
  context: StoreContext,
  now: number,
  limit: number,
  skipProviders: readonly string[],
  scope: JobScope | null = null,
  after: { nextAttemptAt: number; id: string } | null = null,
  order: QueueOrder = "fair",
): Promise<Job[]> {
  const providers = PROVIDER_IDS.filter((provider) => !skipProviders.includes(provider));
  if (providers.length === 0) return [];
  // Every job of the store (a worker, serve): tenants take turns. Each read starts at the fair head (the jobs claimed
  // since are no longer queued), so `after` pages only the due order. A command's own jobs are its tenant's alone.
  if (scope === null && order === "fair") {
    const fair = await fairDueQueued(context, now, limit, providers);
    if (fair !== null) return fair;
  }
  const key = `dueQueued:${providers.join("")}:${scopeKeyOf(scope)}:${after ? "after" : "first"}:${limit}`;
  const values = { now, ...scopeValuesOf(scope), ...(after ? { afterAt: after.nextAttemptAt, afterId: after.id } : {}) };
  const rows = await context.reusable(context.db, key, (slot) => {
    const inThisScope = (eb: ExpressionBuilder<Database, "jobs">) => inScopeSlots(eb, scope!, slot);
    const afterSlots = () => ({ nextAttemptAt: slot<number>("afterAt"), id: slot<string>("afterId") });
    if (scope && "jobIds" in scope) {
      // A command's own few jobs: read by their ids.
      let query = context.db
        .selectFrom("jobs")
        .selectAll()
        .where(inThisScope)
        .where("state", "=", "queued")
        .where("next_attempt_at", "<=", slot<number>("now"))
        .where("provider", "in", providers);
      if (after) query = query.where((eb) => afterInQueue(eb, afterSlots()));
      return query.orderBy("next_attempt_at").orderBy("id").limit(literalLimit(limit));
    }
    // The head of each provider's queue (jobs_queue, jobs_batch_queue: due order is index order), then
    // the earliest of those: a halted provider's queue is never walked, and nothing is sorted but the heads.
    const head = (provider: ProviderId) => {
      let branch = context.db
        .selectFrom("jobs")
        .selectAll()
        .where("state", "=", "queued")
        .where("provider", "=", provider)
        .where("next_attempt_at", "<=", slot<number>("now"));
      if (scope) branch = branch.where(inThisScope);
      if (after) branch = branch.where((eb) => afterInQueue(eb, afterSlots()));
      return context.db.selectFrom(branch.orderBy("next_attempt_at").orderBy("id").limit(literalLimit(limit)).as(`head_${provider}`)).selectAll();
    };
    let heads = head(providers[0]!);
    for (const provider of providers.slice(1)) heads = heads.unionAll(head(provider));
    return context.db.selectFrom(heads.as("heads")).selectAll().orderBy("next_attempt_at").orderBy("id").limit(literalLimit(limit));
  }, values);
  return rows.map(rowToJob);
}

export async function routedQueued(context: StoreContext, provider: ProviderId, limit: number, scope: JobScope | null = null, after: { nextAttemptAt: number; id: string } | null = null): Promise<Job[]> {
  // jobs_routed_queue (migration 14): partial on route_json, so the routed jobs only; one range of it by state and
  // provider, in due order.
  let query = context.db
    .selectFrom("jobs")
    .selectAll()
    .where("state", "=", "queued")
    .where("route_json", "is not", null)
    .where("provider", "=", provider);
  if (scope) query = query.where((eb) => inScope(eb, scope));
  if (after) query = query.where((eb) => afterInQueue(eb, after));
  const rows = await query.orderBy("next_attempt_at").orderBy("id").limit(limit).execute();
  return rows.map(rowToJob);
}

export async function dueOwned(context: StoreContext, owner: string, now: number, limit: number, busy: { has(id: string): boolean } = new Set<string>()): Promise<Job[]> {
  // Ids first: the jobs being polled or saved right now are due too, and reading their whole rows
  // on every step would cost more than the step.
  const due = await context.reusable(context.db, `dueOwned:${limit}`, (slot) =>
    context.db
      .selectFrom("jobs")
      .select("id")
      .where("lease_owner", "=", slot<string>("owner"))
      .where("state", "in", ["running", "capturing"])
      .where("next_attempt_at", "<=", slot<number>("now"))
      .orderBy("next_attempt_at")
      .limit(literalLimit(limit)), { owner, now });
  const ids = due.map((row) => row.id).filter((id) => !busy.has(id));
  if (ids.length === 0) return [];
  const read = (idAt: (index: number) => string, ownerValue: string) =>
    context.db
      .selectFrom("jobs")
      .selectAll()
      .where("id", "in", ids.map((_, index) => idAt(index)))
      .where("lease_owner", "=", ownerValue)
      .where("state", "in", ["running", "capturing"])
      .orderBy("next_attempt_at");
  // A step's few due jobs (the common case) by a statement kept compiled for their count; a long list built afresh.
  const rows =
    ids.length <= REUSED_ID_LISTS
      ? await context.reusable(context.db, `dueOwnedRows:${ids.length}`, (slot) => read((index) => slot<string>(`id${index}`), slot<string>("owner")), {
          owner,
          ...Object.fromEntries(ids.map((id, index) => [`id${index}`, id])),
        })
      : await read((index) => ids[index]!, owner).execute();
  return rows.map(rowToJob);
}

export async function dueSettlements(context: StoreContext, now: number, limit: number, scope: JobScope | null = null): Promise<Job[]> {
  let query = context.db
    .selectFrom("jobs")
    .selectAll()
    .where("state", "in", ["succeeded", "failed", "cancelled", "expired"])
    .where("charge_state", "in", ["pending", "unavailable"])
    .where("next_attempt_at", "<=", now);
  if (scope) query = query.where((eb) => inScope(eb, scope));
  const rows = await query.orderBy("next_attempt_at").limit(literalLimit(limit)).execute();
  return rows.map(rowToJob);
}

export async function nextDueAt(context: StoreContext, owner: string | null, skipProviders: readonly string[], after: number, scope: JobScope | null = null, settlements = true, notifications = false): Promise<NextDue> {
  // The first entry after `after` of each provider's queue (an index seek each), then the least of them, and the
  // least of the queues' alone.
  const providers = PROVIDER_IDS.filter((provider) => !skipProviders.includes(provider));
  if (providers.length === 0 && owner === null && !settlements && !notifications) return { at: null, queuedAt: null };
  const key = `nextDueAt:${providers.join("")}:${scopeKeyOf(scope)}:${owner !== null}:${settlements}:${notifications}`;
  const [row] = await context.reusable(context.db, key, (slot) => {
    const inThisScope = (eb: ExpressionBuilder<Database, "jobs">) => inScopeSlots(eb, scope!, slot);
    const firstDue = (provider: ProviderId) => {
      let branch = context.db
        .selectFrom("jobs")
        .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`1`.as("queued")])
        .where("state", "=", "queued")
        .where("provider", "=", provider)
        .where("next_attempt_at", ">", slot<number>("after"));
      if (scope) branch = branch.where(inThisScope);
      return branch;
    };
    let settling = context.db
      .selectFrom("jobs")
      .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`0`.as("queued")])
      .where("charge_state", "in", ["pending", "unavailable"])
      .where("state", "in", ["succeeded", "failed", "cancelled", "expired"])
      .where("next_attempt_at", ">", slot<number>("after"));
    if (scope) settling = settling.where(inThisScope);
    const branches = providers.map(firstDue);
    if (owner !== null) {
      branches.push(
        context.db
          .selectFrom("jobs")
          .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`0`.as("queued")])
          .where("lease_owner", "=", slot<string>("owner"))
          .where("state", "in", ["running", "capturing"])
          .where("next_attempt_at", ">", slot<number>("after")),
      );
    }
    if (settlements) branches.push(settling);
    // Through notifications_due: only the notifications still owed.
    const owed = () =>
      owedNotificationsIn(context.db, scope, slot)
        .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`0`.as("queued")])
        .where("next_attempt_at", ">", slot<number>("after"));
    const [first, ...others] = branches;
    // Every provider skipped and nothing else asked for but the notifications: they alone.
    let all = first ?? owed();
    for (const branch of others) all = all.unionAll(branch);
    if (notifications && first) all = all.unionAll(owed());
    return context.db
      .selectFrom(all.as("due"))
      .select((eb) => [eb.fn.min("at").as("at"), eb.fn.min(eb.case().when("queued", "=", 1).then(eb.ref("at")).end()).as("queued_at")]);
  }, { owner, after, ...scopeValuesOf(scope) });
  const number = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  return { at: number(row?.at), queuedAt: number(row?.queued_at) };
}
