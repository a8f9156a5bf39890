import { sql } from "kysely";
import type { Job } from "../core/job.js";
import { type BudgetStatus, budgetStatusOf, commitToBudget } from "./budgets.js";
import type { Db, StoreContext } from "./context.js";
import { insertJobsIn } from "./jobs.js";
import type { NewJob } from "./store.js";

/**
 * Admission (issue 35): jobs stored, their estimates reserved in their
 * budget and their idempotency key taken, all in one transaction, so that
 * concurrent requests (of one server or of several on one PostgreSQL store)
 * are never told "accepted" for jobs the budget cannot pay, and a request
 * retried under its key makes its jobs once.
 */

/** One request to admit jobs, decided whole: admitted, or refused with nothing written. */
export interface Admission {
  /** Whose jobs they are; every job of the admission has this tenant. */
  tenant: string;
  jobs: NewJob[];
  /** The budget the created jobs' estimates are reserved in (their `budgetId`), refused whole past its ceiling. */
  budgetId: string | null;
  /** Whether a stored job under one of the refs is another request (the application compares them): the admission is then refused. */
  differs(stored: Job, wanted: NewJob): boolean;
  /** The request's `Idempotency-Key`, the sha256 of what it asked, and how long the key is kept. */
  idempotency: { key: string; requestSha256: string; keepMs: number } | null;
  /** The batch the answer names, kept with the key (null: a single job). */
  batchId: string | null;
}

export type AdmissionOutcome =
  /** Every job stored or found (`created: false`: under its ref already, the same request). */
  | { kind: "admitted"; jobs: Array<{ job: Job; created: boolean }>; budget: BudgetStatus | null }
  /** The jobs it would create cost more than the budget has left: `neededMicroUsd` against `budget`. */
  | { kind: "over_budget"; budget: BudgetStatus; neededMicroUsd: number }
  /** A ref is stored with another request. */
  | { kind: "ref_conflict"; stored: Job; wanted: NewJob }
  /** The key was used before for the same request: its answer then. */
  | { kind: "replayed"; status: 200 | 201; jobIds: string[]; batchId: string | null }
  /** The key was used before for another request. */
  | { kind: "key_reused"; key: string };

/** Expired keys removed at most this often by one store object, a bounded number at a time. */
const KEY_SWEEP_EVERY_MS = 60_000;
const KEY_SWEEP_ROWS = 1_000;
const lastSweeps = new WeakMap<StoreContext, number>();

/**
 * Decides each admission in order, in one transaction: requests that arrive
 * together are admitted by one write (intake's group commit). The budgets
 * they reserve in are locked first, in id order (two admissions' transactions
 * lock them in the same order, so neither waits on the other's), and every
 * admission's writes are undone to a savepoint when it is refused.
 */
export async function admit(context: StoreContext, admissions: readonly Admission[], now: number): Promise<AdmissionOutcome[]> {
  const outcomes = await context.db.transaction().execute(async (trx) => {
    const budgetIds = [...new Set(admissions.flatMap((admission) => (admission.budgetId === null ? [] : [admission.budgetId])))].sort();
    const budgets = new Map<string, BudgetStatus>();
    if (budgetIds.length > 0) {
      const rows = await context.locked(trx.selectFrom("budgets").selectAll().where("id", "in", budgetIds).orderBy("id")).execute();
      for (const row of rows) budgets.set(row.id, budgetStatusOf(row));
    }
    const decided: AdmissionOutcome[] = [];
    for (const [index, admission] of admissions.entries()) {
      const savepoint = sql.raw(`admission_${index}`);
      await sql`savepoint ${savepoint}`.execute(trx);
      const outcome = await admitOne(context, trx, admission, budgets, now);
      if (outcome.kind === "admitted") await sql`release savepoint ${savepoint}`.execute(trx);
      else await sql`rollback to savepoint ${savepoint}`.execute(trx);
      decided.push(outcome);
    }
    if (decided.some((outcome) => outcome.kind === "admitted" && outcome.jobs.some((entry) => entry.created))) await context.announce(trx);
    return decided;
  });
  if (admissions.some((admission) => admission.idempotency !== null)) await sweepExpiredKeys(context, now);
  return outcomes;
}

async function admitOne(context: StoreContext, trx: Db, admission: Admission, budgets: Map<string, BudgetStatus>, now: number): Promise<AdmissionOutcome> {
  const { idempotency } = admission;
  if (idempotency) {
    // The key is taken first: a concurrent duplicate waits here for this transaction, then finds the key answered.
    const taken = await trx
      .insertInto("idempotency_keys")
      .values({ tenant: admission.tenant, key: idempotency.key, request_sha256: idempotency.requestSha256, status: 0, job_ids_json: "[]", batch_id: admission.batchId, created_at: now, expires_at: now + idempotency.keepMs })
      .onConflict((conflict) =>
        conflict
          .columns(["tenant", "key"])
          .doUpdateSet((eb) => ({
            request_sha256: eb.ref("excluded.request_sha256"),
            status: eb.ref("excluded.status"),
            job_ids_json: eb.ref("excluded.job_ids_json"),
            batch_id: eb.ref("excluded.batch_id"),
            created_at: eb.ref("excluded.created_at"),
            expires_at: eb.ref("excluded.expires_at"),
          }))
          // An expired key is free again.
          .where("idempotency_keys.expires_at", "<=", now),
      )
      .returning("key")
      .executeTakeFirst();
    if (!taken) {
      const first = await trx.selectFrom("idempotency_keys").selectAll().where("tenant", "=", admission.tenant).where("key", "=", idempotency.key).executeTakeFirstOrThrow();
      if (first.request_sha256 !== idempotency.requestSha256) return { kind: "key_reused", key: idempotency.key };
      return { kind: "replayed", status: Number(first.status) === 201 ? 201 : 200, jobIds: JSON.parse(first.job_ids_json) as string[], batchId: first.batch_id };
    }
  }
  const stored = await insertJobsIn(context, trx, admission.jobs.map((job) => ({ ...job, tenant: admission.tenant })), now, admission.budgetId !== null);
  for (const [index, entry] of stored.entries()) {
    if (!entry.created && admission.differs(entry.job, admission.jobs[index]!)) return { kind: "ref_conflict", stored: entry.job, wanted: admission.jobs[index]! };
  }
  let budget: BudgetStatus | null = null;
  if (admission.budgetId !== null) {
    budget = budgets.get(admission.budgetId) ?? null;
    const neededMicroUsd = stored.reduce((sum, entry) => sum + (entry.created ? (entry.job.estimateMicroUsd ?? 0) : 0), 0);
    if (budget !== null && neededMicroUsd > 0) {
      if (budget.committedMicroUsd + neededMicroUsd > budget.ceilingMicroUsd) return { kind: "over_budget", budget, neededMicroUsd };
      await commitToBudget(context, trx, budget.id, neededMicroUsd, now);
      budget = { ...budget, committedMicroUsd: budget.committedMicroUsd + neededMicroUsd };
      budgets.set(budget.id, budget);
    }
  }
  if (idempotency) {
    await trx
      .updateTable("idempotency_keys")
      .set({ status: stored.some((entry) => entry.created) ? 201 : 200, job_ids_json: JSON.stringify(stored.map((entry) => entry.job.id)) })
      .where("tenant", "=", admission.tenant)
      .where("key", "=", idempotency.key)
      .execute();
  }
  return { kind: "admitted", jobs: stored, budget };
}

/** Removes keys kept past their time, a bounded number, at most once a minute: the table holds about a day of keys. */
async function sweepExpiredKeys(context: StoreContext, now: number): Promise<void> {
  if (now - (lastSweeps.get(context) ?? Number.NEGATIVE_INFINITY) < KEY_SWEEP_EVERY_MS) return;
  lastSweeps.set(context, now);
  await sql`delete from idempotency_keys where (tenant, key) in (select tenant, key from idempotency_keys where expires_at <= ${now} limit ${sql.lit(KEY_SWEEP_ROWS)})`.execute(context.db);
}
