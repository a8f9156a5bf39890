import { type Compilable, sql } from "kysely";
import type { Job } from "../core/job.js";
import { budgetStatusOf, commitToBudget } from "./budgets.js";
import type { Db, StoreContext } from "./context.js";
import { newNotificationId, owedNotificationType } from "./notifications.js";
import { literalLimit } from "./reusable.js";
import { eventRow, rowToJob, toNumber, toNumberOrNull } from "./rows.js";
import type { JobsTable } from "./schema.js";
import type { ClaimInstead, ClaimResult, SlotPoolRequest } from "./store.js";
import { changeLockedWithEvent } from "./transitions.js";

/**
 * The claim (see `Store.claimForSubmit`): a queued job's slots and budget
 * taken, and the job moved to submitting under a lease, in one transaction.
 * PostgreSQL decides it in one call of `mediagate_claim_or_next` (migrations
 * 15 and 16); SQLite by the statements here, which
 * test/store/claim-function.test.ts compares with the function case by case.
 */

/** What `mediagate_claim_or_next` (migrations 15 and 16) answers (its rows as `to_jsonb` writes them). */
type ClaimAnswer = { instead?: boolean } & (
  | { kind: "gone" }
  | { kind: "no_slot"; pool_key: string; retry_at: number | null }
  | { kind: "over_budget"; budget: { id: string; ceiling_micro_usd: number; committed_micro_usd: number } }
  | { kind: "claimed"; job: JobsTable; filled: string[] }
);

/** Due jobs locked at once when a claim's job was taken first: the first one the engine accepts is claimed instead. */
const NEXT_QUEUED_CANDIDATES = 4;

/**
 * What a claim decides on (its state, its budget, estimate and what it holds of the budget, its attempts so far): read
 * and locked first, where the whole row (45 columns, the request among them) would be read only to be read again,
 * changed, by the claim's update.
 */
const CLAIMABLE_COLUMNS = ["id", "state", "attempts", "budget_id", "estimate_micro_usd", "budget_held_micro_usd"] as const;
type Claimable = Pick<Job, "id" | "state" | "attempts" | "budgetId" | "estimateMicroUsd" | "budgetHeldMicroUsd">;

function claimableOf(row: Pick<JobsTable, (typeof CLAIMABLE_COLUMNS)[number]>): Claimable {
  return {
    id: row.id,
    state: row.state as Job["state"],
    attempts: toNumber(row.attempts),
    budgetId: row.budget_id,
    estimateMicroUsd: toNumberOrNull(row.estimate_micro_usd),
    budgetHeldMicroUsd: toNumber(row.budget_held_micro_usd),
  };
}

export async function claimForSubmit(context: StoreContext, jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
  if (context.dialect === "postgres") {
    const claim = await claimInOneStatement(context, jobId, owner, pools, now, leaseMs, instead);
    // Taken first, with no job of its model free in its place: the statements offer the queue's others (poolsOf).
    if (claim.kind !== "gone" || !instead) return claim;
  }
  return claimByStatements(context, jobId, owner, pools, now, leaseMs, instead);
}

/**
 * The claim as the store's own statements in one transaction: SQLite's,
 * where a statement costs no round trip. On PostgreSQL `mediagate_claim_or_next`
 * makes the same decision in one call; `test/store/claim-function.test.ts`
 * runs both there, case by case, and compares what each wrote.
 */
export async function claimByStatements(context: StoreContext, jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
  return context.db.transaction().execute(async (trx) => {
    // What the decision needs, not the whole row: the claimed job comes back whole from its update.
    const [job] = await context.reusable(
      trx,
      "lockClaimable",
      (slot) => context.locked(trx.selectFrom("jobs").select(CLAIMABLE_COLUMNS).where("id", "=", slot<string>("id")), { skipLocked: true }),
      { id: jobId },
    );
    if (job && job.state === "queued") return claimLocked(context, trx, claimableOf(job), owner, pools, now, leaseMs);
    const next = instead ? await lockNextQueued(context, trx, instead, now) : null;
    if (!next) return { kind: "gone" } as const;
    const claim = await claimLocked(context, trx, next.job, owner, next.pools, now, leaseMs);
    return claim.kind === "gone" ? claim : { ...claim, instead: true };
  });
}

/**
 * The first due jobs of `instead`'s queue that no other engine is claiming, locked
 * (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite's writer lock already excludes
 * the others), and the first of them that `poolsOf` accepts.
 */
async function lockNextQueued(context: StoreContext, trx: Db, instead: ClaimInstead, now: number): Promise<{ job: Job; pools: SlotPoolRequest[] } | null> {
  for (const row of await context.locked(nextQueued(trx, instead, now), { skipLocked: true }).execute()) {
    const job = rowToJob(row);
    const pools = instead.poolsOf(job);
    if (pools) return { job, pools };
  }
  return null;
}

/** The first due jobs of `instead`'s queue (its provider's, in its batch). */
function nextQueued(db: Db, instead: ClaimInstead, now: number) {
  let query = db.selectFrom("jobs").selectAll().where("state", "=", "queued").where("provider", "=", instead.provider).where("next_attempt_at", "<=", now);
  if (instead.scope) query = query.where("batch_id", "=", instead.scope.batchId);
  return query.orderBy("next_attempt_at").orderBy("id").limit(literalLimit(NEXT_QUEUED_CANDIDATES));
}

/**
 * PostgreSQL: claimLocked's decision in one round trip where the statements one by one were six
 * (`mediagate_claim_or_next`, migrations 15, 16 and 18), its locks taken in the same order. With `instead` and its
 * `sameAs`, a job taken first is replaced in the same call by the queue's next free job of that model and operation,
 * as the statements' `lockNextQueued` would choose it (see migration 16).
 */
async function claimInOneStatement(context: StoreContext, jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
  const holds = pools.map((pool) => pool.key);
  const notifyType = owedNotificationType(context.notificationPolicy, "queued", "submitting");
  const [row] = await context.reusable<{ claim: ClaimAnswer }>(
    context.db,
    "claimInOneStatement",
    (slot) => {
      const text = (name: string) => sql`cast(${slot(name)} as text)`;
      const bigint = (name: string) => sql`cast(${slot(name)} as bigint)`;
      const statement = sql`select mediagate_claim_or_next(${sql.join([
        text("next_provider"),
        text("next_model"),
        text("next_operation"),
        text("next_batch_id"),
        sql`cast(${slot("next_scan")} as integer)`,
        text("id"),
        text("owner"),
        sql`cast(${slot("keys")} as text[])`,
        sql`cast(${slot("capacities")} as integer[])`,
        bigint("now"),
        bigint("lease_ms"),
        text("holds_json"),
        text("reason"),
        text("notify_type"),
        text("notify_id"),
        text("notify_default_url"),
      ])}) as claim`;
      return { compile: () => statement.compile(context.db) } as Compilable<never>;
    },
    {
      next_provider: instead?.sameAs ? instead.provider : null,
      next_model: instead?.sameAs?.model ?? null,
      next_operation: instead?.sameAs?.operation ?? null,
      next_batch_id: instead?.scope?.batchId ?? null,
      next_scan: NEXT_QUEUED_CANDIDATES,
      id: jobId,
      owner,
      keys: holds,
      capacities: pools.map((pool) => pool.capacity),
      now,
      lease_ms: leaseMs,
      holds_json: JSON.stringify(holds),
      reason: `claimed by ${owner}`,
      notify_type: notifyType,
      notify_id: notifyType ? newNotificationId(now) : null,
      notify_default_url: context.notificationPolicy.defaultUrl ?? null,
    },
  );
  const answer = row!.claim;
  const inPlace = answer.instead ? { instead: true } : {};
  switch (answer.kind) {
    case "gone":
      return { kind: "gone" };
    case "no_slot":
      return { kind: "no_slot", poolKey: answer.pool_key, retryAt: answer.retry_at === null ? null : Number(answer.retry_at), ...inPlace };
    case "over_budget":
      return { kind: "over_budget", budget: budgetStatusOf(answer.budget), ...inPlace };
    case "claimed":
      return { kind: "claimed", job: rowToJob(answer.job), filled: answer.filled, ...inPlace };
  }
}

/**
 * claimForSubmit's decision for a queued job locked in `trx`. PostgreSQL makes the same decision for the job asked
 * for in `mediagate_claim` (migrations 15 and 18): a change to one is made to the other (a new migration replacing the
 * function), and test/store/claim-function.test.ts compares the two case by case.
 */
async function claimLocked(context: StoreContext, trx: Db, job: Claimable, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number): Promise<ClaimResult> {
  const jobId = job.id;
  const filled: string[] = [];
  for (const pool of pools) {
    const readPool = async () => {
      const [found] = await context.reusable(
        trx,
        "readPool",
        (slot) => context.locked(trx.selectFrom("slot_pools").selectAll().where("pool_key", "=", slot<string>("key"))),
        { key: pool.key },
      );
      return found;
    };
    // One statement in the steady state: the pool is written only when it is new or its published capacity changed.
    let row = await readPool();
    if (!row) {
      await trx
        .insertInto("slot_pools")
        .values({ pool_key: pool.key, configured_capacity: pool.capacity, learned_capacity: pool.capacity, blocked_until: 0, updated_at: now })
        .onConflict((conflict) => conflict.column("pool_key").doNothing())
        .execute();
      row = await readPool();
    } else if (Number(row.configured_capacity) !== pool.capacity) {
      // spec: the published capacity can change (C's tier); learned capacity never exceeds it.
      await trx
        .updateTable("slot_pools")
        .set({ configured_capacity: pool.capacity, learned_capacity: context.least(sql`learned_capacity`, pool.capacity) })
        .where("pool_key", "=", pool.key)
        .execute();
      row = await readPool();
    }
    if (!row) throw new Error(`slot pool ${pool.key} could not be created`);
    if (Number(row.blocked_until) > now) return { kind: "no_slot", poolKey: pool.key, retryAt: Number(row.blocked_until) } as const;
    const [held] = await context.reusable(
      trx,
      "slotsHeld",
      (slot) => trx.selectFrom("slot_holds").select((eb) => eb.fn.countAll<number>().as("n")).where("pool_key", "=", slot<string>("key")),
      { key: pool.key },
    );
    if (!held) throw new Error(`slot pool ${pool.key} could not be counted`);
    if (Number(held.n) >= Number(row.learned_capacity)) return { kind: "no_slot", poolKey: pool.key, retryAt: null } as const;
    if (Number(held.n) + 1 >= Number(row.learned_capacity)) filled.push(pool.key);
  }
  // The estimate is committed in the same transaction that decides to send, so no engine on this store can pass the
  // ceiling. A job admitted with its estimate reserved (migration 18) commits only what it sends beyond it (a route that
  // moved it to a dearer target; a cheaper one gives some back), and none is sent while charges above their estimates
  // have taken its budget over the ceiling.
  const budgetHeld = job.estimateMicroUsd ?? 0;
  const more = budgetHeld - job.budgetHeldMicroUsd;
  if (job.budgetId) {
    const [budgetRow] = await context.reusable(
      trx,
      "lockBudget",
      (slot) => context.locked(trx.selectFrom("budgets").selectAll().where("id", "=", slot<string>("id"))),
      { id: job.budgetId },
    );
    if (budgetRow) {
      const budget = budgetStatusOf(budgetRow);
      // An unpriced job (run under --allow-unpriced) commits nothing, so it is sent only while the ceiling is not reached.
      const reached = budget.committedMicroUsd + Math.max(more, 0) > budget.ceilingMicroUsd || (job.estimateMicroUsd === null && budget.committedMicroUsd >= budget.ceilingMicroUsd);
      if (reached) return { kind: "over_budget", budget } as const;
      await commitToBudget(context, trx, job.budgetId, more, now);
    }
  }
  const holds = pools.map((pool) => pool.key);
  const columns: Partial<JobsTable> = {
    state: "submitting",
    reason: null,
    blocked_code: null,
    attempts: job.attempts + 1,
    lease_owner: owner,
    lease_expires_at: now + leaseMs,
    slots_held_json: JSON.stringify(holds),
    ...(job.budgetId ? { budget_held_micro_usd: budgetHeld } : {}),
    updated_at: now,
  };
  const event = eventRow(jobId, now, "queued", "submitting", `claimed by ${owner}`, { attempt: job.attempts + 1, slots: holds });
  return { kind: "claimed", job: rowToJob(await changeLockedWithEvent(context, trx, jobId, columns, event, holds)), filled } as const;
}
