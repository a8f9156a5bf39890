import { type Compilable, type Expression, type ExpressionBuilder, type Kysely, type LogEvent, type SqlBool, sql } from "kysely";
import type { Job, JobEvent, JobOutput, JobState } from "../core/job.js";
import { PROVIDER_IDS, type ProviderId, type RateWindow } from "../core/provider-id.js";
import { eventRow, rowToJob, toNumber, toNumberOrNull } from "./rows.js";
import type { Database, JobsTable } from "./schema.js";
import type { WorkSignals } from "./work-signals.js";
import { type Db, type StoreContext, storeContext } from "./context.js";
import { literalLimit } from "./reusable.js";
import { countWebhookRejections, deliveries, recordDelivery, webhookRejections } from "./deliveries.js";
import { clearHalt, haltProvider, halts } from "./halts.js";
import { answerRateToken, rateWindowUsage, takeRateToken } from "./rate-windows.js";
import { poolStatus, releaseSlots, slotPushback, slotRecover } from "./slots.js";
import { assignBudget, budget, budgetStatusOf, commitToBudget, setBudget, settleCharge } from "./budgets.js";
import { batchSummary, ledgerTotal, spendByDay, spendSummary } from "./spend.js";
import { events, noteEvent } from "./events.js";
import { findJob, getJob, insertJobs, jobByProviderJobId, jobsByRefs, listJobs, outputs, outputsOfJobs, recentRenderSamples } from "./jobs.js";
import { changedBriefs, jobBriefs, jobCounts, jobOutcomes, openCounts } from "./briefs.js";
import { changeLockedWithEvent, markSubmitSent, transition, updateJob } from "./transitions.js";
import { createToken, hasActiveTokens, revokeToken, tokenBySecretSha256, tokens } from "./tokens.js";
import { inScope, inScopeSlots, scopeKeyOf, scopeValuesOf } from "./scope.js";
import {
  claimDueNotifications,
  keepNotificationBody,
  newNotificationId,
  notificationsOf,
  notificationsOwed,
  owedNotificationsIn,
  owedNotificationType,
  recordNotificationAttempt,
} from "./notifications.js";
import type {
  ApiToken,
  BatchSummary,
  SpendLine,
  BudgetStatus,
  DailySpend,
  ClaimInstead,
  ClaimResult,
  JobBrief,
  JobOutcome,
  JobExpectation,
  JobFilter,
  JobPatch,
  JobScope,
  NewJob,
  NextDue,
  Notification,
  NotificationAttempt,
  NotificationPolicy,
  OpenCount,
  JobCount,
  PoolStatus,
  ProviderHalt,
  RateTake,
  RateToken,
  RateWindowUsage,
  RenderSample,
  SlotPoolRequest,
  Store,
  TransitionExtras,
  WebhookDeliveryRecord,
  WebhookRejectionCount,
} from "./store.js";

/** Sees each statement as run: its SQL and its parameters. */
export type QueryListener = (sql: string, parameters: readonly unknown[], durationMs: number) => void;

/** Kysely's `log` option for a listener, or nothing. */
export function queryLog(listener: QueryListener | undefined): { log?: (event: LogEvent) => void } {
  if (!listener) return {};
  return { log: (event) => listener(event.query.sql, event.query.parameters, event.queryDurationMillis) };
}

/** Queue entries after `after` in due order (`next_attempt_at`, then id): the next page of a queue. */
function afterInQueue(eb: ExpressionBuilder<Database, "jobs">, after: { nextAttemptAt: number; id: string }): Expression<SqlBool> {
  return eb.or([eb("next_attempt_at", ">", after.nextAttemptAt), eb.and([eb("next_attempt_at", "=", after.nextAttemptAt), eb("id", ">", after.id)])]);
}

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
 * What a claim decides on (its state, its budget and estimate, its attempts so far): read and locked first, where the
 * whole row (44 columns, the request among them) would be read only to be read again, changed, by the claim's update.
 */
const CLAIMABLE_COLUMNS = ["id", "state", "attempts", "budget_id", "estimate_micro_usd"] as const;
type Claimable = Pick<Job, "id" | "state" | "attempts" | "budgetId" | "estimateMicroUsd">;

function claimableOf(row: Pick<JobsTable, (typeof CLAIMABLE_COLUMNS)[number]>): Claimable {
  return { id: row.id, state: row.state as Job["state"], attempts: toNumber(row.attempts), budgetId: row.budget_id, estimateMicroUsd: toNumberOrNull(row.estimate_micro_usd) };
}

/** Lists of ids up to this long are read by a statement kept compiled for their length (a few shapes, run often). */
const REUSED_ID_LISTS = 16;

/**
 * The Store over Kysely, shared by SQLite and PostgreSQL. The few places
 * where the dialects differ (row locks for the claim and the slot take) are
 * marked; everything else is the same SQL.
 */
export class KyselyStore implements Store {
  /** What each family of statements takes: this store object's db, dialect, statements kept compiled, and counters. */
  private readonly context: StoreContext;

  constructor(
    readonly db: Kysely<Database>,
    readonly dialect: "sqlite" | "postgres",
    private readonly onClose: () => Promise<void> = async () => db.destroy(),
    /** Other processes told of new work (PostgreSQL's LISTEN/NOTIFY); none for an embedded store. */
    private readonly signals: WorkSignals | null = null,
    /** Told the SQL of each statement `reusable` compiles, for a driver that prepares them (PostgreSQL's named statements). */
    onReusable: ((sql: string) => void) | null = null,
  ) {
    this.context = storeContext(db, dialect, signals, onReusable);
  }

  /** See `Store.slotReleases`. */
  get slotReleases(): number {
    return this.context.slotReleases;
  }

  async close(): Promise<void> {
    await this.signals?.close();
    await this.onClose();
  }

  onWork(listener: () => void): () => void {
    return this.signals ? this.signals.subscribe(listener) : () => undefined;
  }

  async announceWork(): Promise<void> {
    await this.context.announce(this.db);
  }

  async dueQueued(
    now: number,
    limit: number,
    skipProviders: readonly string[],
    scope: JobScope | null = null,
    after: { nextAttemptAt: number; id: string } | null = null,
  ): Promise<Job[]> {
    const providers = PROVIDER_IDS.filter((provider) => !skipProviders.includes(provider));
    if (providers.length === 0) return [];
    const key = `dueQueued:${providers.join("")}:${scopeKeyOf(scope)}:${after ? "after" : "first"}:${limit}`;
    const values = { now, ...scopeValuesOf(scope), ...(after ? { afterAt: after.nextAttemptAt, afterId: after.id } : {}) };
    const rows = await this.context.reusable(this.db, key, (slot) => {
      const inThisScope = (eb: ExpressionBuilder<Database, "jobs">) => inScopeSlots(eb, scope!, slot);
      const afterSlots = () => ({ nextAttemptAt: slot<number>("afterAt"), id: slot<string>("afterId") });
      if (scope && "jobIds" in scope) {
        // A command's own few jobs: read by their ids.
        let query = this.db
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
        let branch = this.db
          .selectFrom("jobs")
          .selectAll()
          .where("state", "=", "queued")
          .where("provider", "=", provider)
          .where("next_attempt_at", "<=", slot<number>("now"));
        if (scope) branch = branch.where(inThisScope);
        if (after) branch = branch.where((eb) => afterInQueue(eb, afterSlots()));
        return this.db.selectFrom(branch.orderBy("next_attempt_at").orderBy("id").limit(literalLimit(limit)).as(`head_${provider}`)).selectAll();
      };
      let heads = head(providers[0]!);
      for (const provider of providers.slice(1)) heads = heads.unionAll(head(provider));
      return this.db.selectFrom(heads.as("heads")).selectAll().orderBy("next_attempt_at").orderBy("id").limit(literalLimit(limit));
    }, values);
    return rows.map(rowToJob);
  }

  async routedQueued(provider: ProviderId, limit: number, scope: JobScope | null = null, after: { nextAttemptAt: number; id: string } | null = null): Promise<Job[]> {
    // jobs_routed_queue (migration 14): partial on route_json, so the routed jobs only; one range of it by state and
    // provider, in due order.
    let query = this.db
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

  async claimForSubmit(jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
    if (this.dialect === "postgres") {
      const claim = await this.claimInOneStatement(jobId, owner, pools, now, leaseMs, instead);
      // Taken first, with no job of its model free in its place: the statements offer the queue's others (poolsOf).
      if (claim.kind !== "gone" || !instead) return claim;
    }
    return this.claimByStatements(jobId, owner, pools, now, leaseMs, instead);
  }

  /**
   * The claim as the store's own statements in one transaction: SQLite's,
   * where a statement costs no round trip. On PostgreSQL `mediagate_claim_or_next`
   * makes the same decision in one call; `test/store/claim-function.test.ts`
   * runs both there, case by case, and compares what each wrote.
   */
  async claimByStatements(jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
    return this.db.transaction().execute(async (trx) => {
      // What the decision needs, not the whole row: the claimed job comes back whole from its update.
      const [job] = await this.context.reusable(
        trx,
        "lockClaimable",
        (slot) => this.context.locked(trx.selectFrom("jobs").select(CLAIMABLE_COLUMNS).where("id", "=", slot<string>("id")), { skipLocked: true }),
        { id: jobId },
      );
      if (job && job.state === "queued") return this.claimLocked(trx, claimableOf(job), owner, pools, now, leaseMs);
      const next = instead ? await this.lockNextQueued(trx, instead, now) : null;
      if (!next) return { kind: "gone" } as const;
      const claim = await this.claimLocked(trx, next.job, owner, next.pools, now, leaseMs);
      return claim.kind === "gone" ? claim : { ...claim, instead: true };
    });
  }

  /**
   * The first due jobs of `instead`'s queue that no other engine is claiming, locked
   * (PostgreSQL: FOR UPDATE SKIP LOCKED; SQLite's writer lock already excludes
   * the others), and the first of them that `poolsOf` accepts.
   */
  private async lockNextQueued(trx: Db, instead: ClaimInstead, now: number): Promise<{ job: Job; pools: SlotPoolRequest[] } | null> {
    for (const row of await this.context.locked(this.nextQueued(trx, instead, now), { skipLocked: true }).execute()) {
      const job = rowToJob(row);
      const pools = instead.poolsOf(job);
      if (pools) return { job, pools };
    }
    return null;
  }

  /** The first due jobs of `instead`'s queue (its provider's, in its batch). */
  private nextQueued(db: Db, instead: ClaimInstead, now: number) {
    let query = db.selectFrom("jobs").selectAll().where("state", "=", "queued").where("provider", "=", instead.provider).where("next_attempt_at", "<=", now);
    if (instead.scope) query = query.where("batch_id", "=", instead.scope.batchId);
    return query.orderBy("next_attempt_at").orderBy("id").limit(literalLimit(NEXT_QUEUED_CANDIDATES));
  }

  /**
   * PostgreSQL: claimLocked's decision in one round trip where the statements one by one were six
   * (`mediagate_claim_or_next`, migrations 15 and 16), its locks taken in the same order. With `instead` and its
   * `sameAs`, a job taken first is replaced in the same call by the queue's next free job of that model and operation,
   * as the statements' `lockNextQueued` would choose it (see migration 16).
   */
  private async claimInOneStatement(jobId: string, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number, instead?: ClaimInstead): Promise<ClaimResult> {
    const holds = pools.map((pool) => pool.key);
    const notifyType = owedNotificationType(this.context.notificationPolicy, "queued", "submitting");
    const [row] = await this.context.reusable<{ claim: ClaimAnswer }>(
      this.db,
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
        return { compile: () => statement.compile(this.db) } as Compilable<never>;
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
        notify_default_url: this.context.notificationPolicy.defaultUrl ?? null,
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
   * for in migration 15's `mediagate_claim`: a change to one is made to the other (a new migration replacing the
   * function), and test/store/claim-function.test.ts compares the two case by case.
   */
  private async claimLocked(trx: Db, job: Claimable, owner: string, pools: SlotPoolRequest[], now: number, leaseMs: number): Promise<ClaimResult> {
    const jobId = job.id;
    const filled: string[] = [];
    for (const pool of pools) {
      const readPool = async () => {
        const [found] = await this.context.reusable(
          trx,
          "readPool",
          (slot) => this.context.locked(trx.selectFrom("slot_pools").selectAll().where("pool_key", "=", slot<string>("key"))),
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
          .set({ configured_capacity: pool.capacity, learned_capacity: this.context.least(sql`learned_capacity`, pool.capacity) })
          .where("pool_key", "=", pool.key)
          .execute();
        row = await readPool();
      }
      if (!row) throw new Error(`slot pool ${pool.key} could not be created`);
      if (Number(row.blocked_until) > now) return { kind: "no_slot", poolKey: pool.key, retryAt: Number(row.blocked_until) } as const;
      const [held] = await this.context.reusable(
        trx,
        "slotsHeld",
        (slot) => trx.selectFrom("slot_holds").select((eb) => eb.fn.countAll<number>().as("n")).where("pool_key", "=", slot<string>("key")),
        { key: pool.key },
      );
      if (!held) throw new Error(`slot pool ${pool.key} could not be counted`);
      if (Number(held.n) >= Number(row.learned_capacity)) return { kind: "no_slot", poolKey: pool.key, retryAt: null } as const;
      if (Number(held.n) + 1 >= Number(row.learned_capacity)) filled.push(pool.key);
    }
    // The estimate is committed in the same transaction that decides to send, so no engine on this store can pass the ceiling.
    const budgetHeld = job.estimateMicroUsd ?? 0;
    if (job.budgetId) {
      const [budgetRow] = await this.context.reusable(
        trx,
        "lockBudget",
        (slot) => this.context.locked(trx.selectFrom("budgets").selectAll().where("id", "=", slot<string>("id"))),
        { id: job.budgetId },
      );
      if (budgetRow) {
        const budget = budgetStatusOf(budgetRow);
        // An unpriced job (run under --allow-unpriced) commits nothing, so it is sent only while the ceiling is not reached.
        const reached = budget.committedMicroUsd + budgetHeld > budget.ceilingMicroUsd || (job.estimateMicroUsd === null && budget.committedMicroUsd >= budget.ceilingMicroUsd);
        if (reached) return { kind: "over_budget", budget } as const;
        await commitToBudget(this.context, trx, job.budgetId, budgetHeld, now);
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
    return { kind: "claimed", job: rowToJob(await changeLockedWithEvent(this.context, trx, jobId, columns, event, holds)), filled } as const;
  }

  async dueOwned(owner: string, now: number, limit: number, busy: { has(id: string): boolean } = new Set<string>()): Promise<Job[]> {
    // Ids first: the jobs being polled or saved right now are due too, and reading their whole rows
    // on every step would cost more than the step.
    const due = await this.context.reusable(this.db, `dueOwned:${limit}`, (slot) =>
      this.db
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
      this.db
        .selectFrom("jobs")
        .selectAll()
        .where("id", "in", ids.map((_, index) => idAt(index)))
        .where("lease_owner", "=", ownerValue)
        .where("state", "in", ["running", "capturing"])
        .orderBy("next_attempt_at");
    // A step's few due jobs (the common case) by a statement kept compiled for their count; a long list built afresh.
    const rows =
      ids.length <= REUSED_ID_LISTS
        ? await this.context.reusable(this.db, `dueOwnedRows:${ids.length}`, (slot) => read((index) => slot<string>(`id${index}`), slot<string>("owner")), {
            owner,
            ...Object.fromEntries(ids.map((id, index) => [`id${index}`, id])),
          })
        : await read((index) => ids[index]!, owner).execute();
    return rows.map(rowToJob);
  }

  async dueSettlements(now: number, limit: number, scope: JobScope | null = null): Promise<Job[]> {
    let query = this.db
      .selectFrom("jobs")
      .selectAll()
      .where("state", "in", ["succeeded", "failed", "cancelled", "expired"])
      .where("charge_state", "in", ["pending", "unavailable"])
      .where("next_attempt_at", "<=", now);
    if (scope) query = query.where((eb) => inScope(eb, scope));
    const rows = await query.orderBy("next_attempt_at").limit(literalLimit(limit)).execute();
    return rows.map(rowToJob);
  }

  async adoptOrphans(owner: string, now: number, leaseMs: number, isDeadOwner: (owner: string) => boolean, scope: JobScope | null = null): Promise<Job[]> {
    let candidatesQuery = this.db
      .selectFrom("jobs")
      .select(["id", "lease_owner", "lease_expires_at"])
      .where("state", "in", ["submitting", "running", "capturing"])
      .where((eb) => eb.or([eb("lease_owner", "is", null), eb("lease_owner", "<>", owner)]));
    if (scope) candidatesQuery = candidatesQuery.where((eb) => inScope(eb, scope));
    const candidates = await candidatesQuery.execute();
    const adopted: Job[] = [];
    for (const candidate of candidates) {
      const expired = candidate.lease_expires_at === null || Number(candidate.lease_expires_at) < now;
      if (!expired && !(candidate.lease_owner && isDeadOwner(candidate.lease_owner))) continue;
      let query = this.db
        .updateTable("jobs")
        .set({ lease_owner: owner, lease_expires_at: now + leaseMs, next_attempt_at: now, updated_at: now })
        .where("id", "=", candidate.id)
        .where("state", "in", ["submitting", "running", "capturing"]);
      query =
        candidate.lease_owner === null
          ? query.where("lease_owner", "is", null)
          : query.where("lease_owner", "=", candidate.lease_owner);
      const result = await query.executeTakeFirst();
      if (Number(result.numUpdatedRows) === 0) continue;
      const job = await getJob(this.context, candidate.id);
      if (job) adopted.push(job);
    }
    return adopted;
  }

  async renewLeases(owner: string, leaseExpiresAt: number): Promise<void> {
    await this.db
      .updateTable("jobs")
      .set({ lease_expires_at: leaseExpiresAt })
      .where("lease_owner", "=", owner)
      .where("state", "in", ["submitting", "running", "capturing"])
      .execute();
  }

  async releaseLeases(owner: string): Promise<void> {
    await this.db
      .updateTable("jobs")
      .set({ lease_owner: null, lease_expires_at: null })
      .where("lease_owner", "=", owner)
      .execute();
  }

  async nextDueAt(owner: string | null, skipProviders: readonly string[], after: number, scope: JobScope | null = null, settlements = true, notifications = false): Promise<NextDue> {
    // The first entry after `after` of each provider's queue (an index seek each), then the least of them, and the
    // least of the queues' alone.
    const providers = PROVIDER_IDS.filter((provider) => !skipProviders.includes(provider));
    if (providers.length === 0 && owner === null && !settlements && !notifications) return { at: null, queuedAt: null };
    const key = `nextDueAt:${providers.join("")}:${scopeKeyOf(scope)}:${owner !== null}:${settlements}:${notifications}`;
    const [row] = await this.context.reusable(this.db, key, (slot) => {
      const inThisScope = (eb: ExpressionBuilder<Database, "jobs">) => inScopeSlots(eb, scope!, slot);
      const firstDue = (provider: ProviderId) => {
        let branch = this.db
          .selectFrom("jobs")
          .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`1`.as("queued")])
          .where("state", "=", "queued")
          .where("provider", "=", provider)
          .where("next_attempt_at", ">", slot<number>("after"));
        if (scope) branch = branch.where(inThisScope);
        return branch;
      };
      let settling = this.db
        .selectFrom("jobs")
        .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`0`.as("queued")])
        .where("charge_state", "in", ["pending", "unavailable"])
        .where("state", "in", ["succeeded", "failed", "cancelled", "expired"])
        .where("next_attempt_at", ">", slot<number>("after"));
      if (scope) settling = settling.where(inThisScope);
      const branches = providers.map(firstDue);
      if (owner !== null) {
        branches.push(
          this.db
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
        owedNotificationsIn(this.db, scope, slot)
          .select((eb) => [eb.fn.min("next_attempt_at").as("at"), sql<number>`0`.as("queued")])
          .where("next_attempt_at", ">", slot<number>("after"));
      const [first, ...others] = branches;
      // Every provider skipped and nothing else asked for but the notifications: they alone.
      let all = first ?? owed();
      for (const branch of others) all = all.unionAll(branch);
      if (notifications && first) all = all.unionAll(owed());
      return this.db
        .selectFrom(all.as("due"))
        .select((eb) => [eb.fn.min("at").as("at"), eb.fn.min(eb.case().when("queued", "=", 1).then(eb.ref("at")).end()).as("queued_at")]);
    }, { owner, after, ...scopeValuesOf(scope) });
    const number = (value: unknown) => (value === null || value === undefined ? null : Number(value));
    return { at: number(row?.at), queuedAt: number(row?.queued_at) };
  }

  setNotificationPolicy(policy: NotificationPolicy): void {
    this.context.notificationPolicy = { ...policy };
  }

  claimDueNotifications(now: number, limit: number, leaseMs: number, scope: JobScope | null = null): Promise<Notification[]> {
    return claimDueNotifications(this.db, this.dialect, now, limit, leaseMs, scope);
  }

  notificationsOwed(scope: JobScope | null): Promise<{ owed: number; neverTried: number }> {
    return notificationsOwed(this.db, scope);
  }

  keepNotificationBody(id: string, body: string): Promise<string> {
    return keepNotificationBody(this.db, id, body);
  }

  recordNotificationAttempt(attempt: NotificationAttempt): Promise<boolean> {
    return recordNotificationAttempt(this.db, attempt);
  }

  notifications(jobId: string): Promise<Notification[]> {
    return notificationsOf(this.db, jobId);
  }

  haltProvider(halt: ProviderHalt): Promise<void> {
    return haltProvider(this.context, halt);
  }

  clearHalt(provider: ProviderId): Promise<void> {
    return clearHalt(this.context, provider);
  }

  halts(): Promise<ProviderHalt[]> {
    return halts(this.context);
  }

  createToken(token: ApiToken): Promise<ApiToken | null> {
    return createToken(this.context, token);
  }

  tokenBySecretSha256(secretSha256: string): Promise<ApiToken | null> {
    return tokenBySecretSha256(this.context, secretSha256);
  }

  tokens(): Promise<ApiToken[]> {
    return tokens(this.context);
  }

  revokeToken(nameOrId: string, at: number): Promise<ApiToken | null> {
    return revokeToken(this.context, nameOrId, at);
  }

  hasActiveTokens(): Promise<boolean> {
    return hasActiveTokens(this.context);
  }

  recordDelivery(delivery: WebhookDeliveryRecord): Promise<"recorded" | "duplicate"> {
    return recordDelivery(this.context, delivery);
  }

  deliveries(filter?: { provider?: ProviderId; jobId?: string }): Promise<WebhookDeliveryRecord[]> {
    return deliveries(this.context, filter);
  }

  countWebhookRejections(counts: readonly WebhookRejectionCount[]): Promise<void> {
    return countWebhookRejections(this.context, counts);
  }

  webhookRejections(filter?: { provider?: string; from?: number; to?: number }): Promise<WebhookRejectionCount[]> {
    return webhookRejections(this.context, filter);
  }

  takeRateToken(windows: readonly RateWindow[], now: number | (() => number)): Promise<RateTake> {
    return takeRateToken(this.context, windows, now);
  }

  answerRateToken(token: RateToken, at: number): Promise<void> {
    return answerRateToken(this.context, token, at);
  }

  rateWindowUsage(windows: readonly RateWindow[], now: number): Promise<RateWindowUsage[]> {
    return rateWindowUsage(this.context, windows, now);
  }

  releaseSlots(jobId: string, now: number): Promise<void> {
    return releaseSlots(this.context, jobId, now);
  }

  slotPushback(poolKeys: readonly string[], blockedUntil: number, now: number): Promise<void> {
    return slotPushback(this.context, poolKeys, blockedUntil, now);
  }

  slotRecover(poolKey: string, now: number): Promise<void> {
    return slotRecover(this.context, poolKey, now);
  }

  poolStatus(): Promise<PoolStatus[]> {
    return poolStatus(this.context);
  }

  setBudget(id: string, ceilingMicroUsd: number, now: number): Promise<BudgetStatus> {
    return setBudget(this.context, id, ceilingMicroUsd, now);
  }

  budget(id: string): Promise<BudgetStatus | null> {
    return budget(this.context, id);
  }

  assignBudget(budgetId: string, jobIds: readonly string[], now: number): Promise<void> {
    return assignBudget(this.context, budgetId, jobIds, now);
  }

  settleCharge(jobId: string, charge: { microUsd: number; source: string }, now: number): Promise<Job | null> {
    return settleCharge(this.context, jobId, charge, now);
  }

  ledgerTotal(filter?: { provider?: ProviderId; from?: number; to?: number }): Promise<number> {
    return ledgerTotal(this.context, filter);
  }

  batchSummary(batchId: string, tokenId?: string): Promise<BatchSummary> {
    return batchSummary(this.context, batchId, tokenId);
  }

  spendSummary(from: number, to: number, tokenId?: string): Promise<SpendLine[]> {
    return spendSummary(this.context, from, to, tokenId);
  }

  spendByDay(from: number, to: number, tokenId?: string): Promise<DailySpend[]> {
    return spendByDay(this.context, from, to, tokenId);
  }

  insertJobs(jobs: NewJob[], now: number): Promise<Array<{ job: Job; created: boolean }>> {
    return insertJobs(this.context, jobs, now);
  }

  getJob(id: string): Promise<Job | null> {
    return getJob(this.context, id);
  }

  findJob(idOrRef: string): Promise<Job | null> {
    return findJob(this.context, idOrRef);
  }

  jobByProviderJobId(provider: ProviderId, providerJobId: string): Promise<Job | null> {
    return jobByProviderJobId(this.context, provider, providerJobId);
  }

  listJobs(filter?: JobFilter): Promise<Job[]> {
    return listJobs(this.context, filter);
  }

  jobsByRefs(refs: readonly string[]): Promise<Job[]> {
    return jobsByRefs(this.context, refs);
  }

  outputs(jobId: string): Promise<JobOutput[]> {
    return outputs(this.context, jobId);
  }

  outputsOfJobs(jobIds: readonly string[]): Promise<Map<string, JobOutput[]>> {
    return outputsOfJobs(this.context, jobIds);
  }

  recentRenderSamples(provider: string, model: string, limit: number): Promise<RenderSample[]> {
    return recentRenderSamples(this.context, provider, model, limit);
  }

  events(jobId: string): Promise<JobEvent[]> {
    return events(this.context, jobId);
  }

  noteEvent(jobId: string, reason: string, now: number, detail?: unknown): Promise<void> {
    return noteEvent(this.context, jobId, reason, now, detail);
  }

  jobBriefs(scope: JobScope): Promise<JobBrief[]> {
    return jobBriefs(this.context, scope);
  }

  jobOutcomes(ids: readonly string[]): Promise<JobOutcome[]> {
    return jobOutcomes(this.context, ids);
  }

  changedBriefs(scope: JobScope, since: number, limit: number, after?: { updatedAt: number; id: string } | null): Promise<JobBrief[]> {
    return changedBriefs(this.context, scope, since, limit, after);
  }

  openCounts(scope: JobScope): Promise<OpenCount[]> {
    return openCounts(this.context, scope);
  }

  jobCounts(): Promise<JobCount[]> {
    return jobCounts(this.context);
  }

  transition(jobId: string, expect: JobExpectation, to: JobState, patch: JobPatch, reason: string, now: number, detail?: unknown, extras?: TransitionExtras): Promise<Job | null> {
    return transition(this.context, jobId, expect, to, patch, reason, now, detail, extras);
  }

  updateJob(jobId: string, expect: JobExpectation, patch: JobPatch, now: number): Promise<Job | null> {
    return updateJob(this.context, jobId, expect, patch, now);
  }

  markSubmitSent(jobId: string, owner: string, at: number): Promise<boolean> {
    return markSubmitSent(this.context, jobId, owner, at);
  }
}
