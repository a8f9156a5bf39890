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
 * together are admitted by one write (intake's group commit), in a few
 * statements whatever their number (every key taken by one insert, every job
 * by one, each budget's reservations by one update), so that a group costs a
 * few round trips to PostgreSQL, not a few per request. The budgets they
 * reserve in are locked first, in id order (two writers lock them in the same
 * order, so neither waits on the other's). An admission refused after its
 * jobs were inserted (a ref stored as another request, its budget passed)
 * has them deleted again in the same transaction: nothing of it is kept.
 */
export async function admit(context: StoreContext, admissions: readonly Admission[], now: number): Promise<AdmissionOutcome[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await admitOnce(context, admissions, now);
    } catch (error) {
      // Two writers inserting some of the same refs (or keys) in opposite orders each wait for the other: PostgreSQL
      // ends one of them (40P01). Nothing of it was kept; it is decided again, against what the other wrote.
      if ((error as { code?: string }).code !== "40P01" || attempt >= ADMISSION_ATTEMPTS) throw error;
    }
  }
}

/** Tries of one write that PostgreSQL ended to break a deadlock. */
const ADMISSION_ATTEMPTS = 3;

async function admitOnce(context: StoreContext, admissions: readonly Admission[], now: number): Promise<AdmissionOutcome[]> {
  const outcomes = await context.db.transaction().execute(async (trx) => {
    const budgetIds = [...new Set(admissions.flatMap((admission) => (admission.budgetId === null ? [] : [admission.budgetId])))].sort();
    const budgets = new Map<string, BudgetStatus>();
    if (budgetIds.length > 0) {
      const rows = await context.locked(trx.selectFrom("budgets").selectAll().where("id", "in", budgetIds).orderBy("id")).execute();
      for (const row of rows) budgets.set(row.id, budgetStatusOf(row));
    }
    const decided = new Array<AdmissionOutcome>(admissions.length);
    for (const round of rounds(admissions)) await admitRound(context, trx, round, budgets, now, decided);
    if (decided.some((outcome) => outcome.kind === "admitted" && outcome.jobs.some((entry) => entry.created))) await context.announce(trx);
    return decided;
  });
  if (admissions.some((admission) => admission.idempotency !== null)) await sweepExpiredKeys(context, now);
  return outcomes;
}

/**
 * The admissions split into rounds, decided one after another, none of which holds two admissions with the same key
 * or ref of one tenant: the later one is decided once the earlier one's jobs (or its refusal) are known. Usually one.
 */
function rounds(admissions: readonly Admission[]): Array<Array<{ index: number; admission: Admission }>> {
  const rounds: Array<{ entries: Array<{ index: number; admission: Admission }>; names: Set<string> }> = [];
  admissions.forEach((admission, index) => {
    const names = [
      ...(admission.idempotency ? [`key\u0000${admission.tenant}\u0000${admission.idempotency.key}`] : []),
      ...admission.jobs.map((job) => `ref\u0000${admission.tenant}\u0000${job.ref}`),
    ];
    // After the last round that names one of these (its order kept), in the first round that names none.
    let after = -1;
    rounds.forEach((round, at) => {
      if (names.some((name) => round.names.has(name))) after = at;
    });
    let round = rounds.slice(after + 1).find((each) => !names.some((name) => each.names.has(name)));
    if (!round) rounds.push((round = { entries: [], names: new Set() }));
    round.entries.push({ index, admission });
    for (const name of names) round.names.add(name);
  });
  return rounds.map((round) => round.entries);
}

async function admitRound(
  context: StoreContext,
  trx: Db,
  round: ReadonlyArray<{ index: number; admission: Admission }>,
  budgets: Map<string, BudgetStatus>,
  now: number,
  decided: AdmissionOutcome[],
): Promise<void> {
  // Keys first: a concurrent duplicate waits here for this transaction, then finds the key answered.
  const keyed = round.filter((entry) => entry.admission.idempotency !== null);
  const taken = await takeKeys(trx, keyed.map((entry) => entry.admission), now);
  const open: Array<{ index: number; admission: Admission }> = [];
  for (const entry of round) {
    const { admission } = entry;
    const key = admission.idempotency;
    if (key && !taken.has(keyName(admission.tenant, key.key))) {
      const first = await trx.selectFrom("idempotency_keys").selectAll().where("tenant", "=", admission.tenant).where("key", "=", key.key).executeTakeFirstOrThrow();
      decided[entry.index] =
        first.request_sha256 !== key.requestSha256
          ? { kind: "key_reused", key: key.key }
          : { kind: "replayed", status: Number(first.status) === 201 ? 201 : 200, jobIds: JSON.parse(first.job_ids_json) as string[], batchId: first.batch_id };
    } else open.push(entry);
  }
  // Every job of the round in one insert (a ref its tenant stored already is that job, created: false).
  const jobs = open.flatMap((entry) => entry.admission.jobs.map((job) => ({ ...job, tenant: entry.admission.tenant })));
  const stored = await insertJobsIn(context, trx, jobs, now, true);
  const undo: string[] = [];
  const keysRefused: Admission[] = [];
  const reserved = new Map<string, number>();
  let at = 0;
  for (const entry of open) {
    const { admission } = entry;
    const mine = stored.slice(at, at + admission.jobs.length);
    at += admission.jobs.length;
    const refuse = (outcome: AdmissionOutcome) => {
      decided[entry.index] = outcome;
      undo.push(...mine.filter((each) => each.created).map((each) => each.job.id));
      if (admission.idempotency) keysRefused.push(admission);
    };
    const conflict = mine.findIndex((each, index) => !each.created && admission.differs(each.job, admission.jobs[index]!));
    if (conflict >= 0) {
      refuse({ kind: "ref_conflict", stored: mine[conflict]!.job, wanted: admission.jobs[conflict]! });
      continue;
    }
    let budget = admission.budgetId === null ? null : (budgets.get(admission.budgetId) ?? null);
    const neededMicroUsd = mine.reduce((sum, each) => sum + (each.created ? (each.job.estimateMicroUsd ?? 0) : 0), 0);
    if (budget !== null && neededMicroUsd > 0) {
      if (budget.committedMicroUsd + neededMicroUsd > budget.ceilingMicroUsd) {
        refuse({ kind: "over_budget", budget, neededMicroUsd });
        continue;
      }
      budget = { ...budget, committedMicroUsd: budget.committedMicroUsd + neededMicroUsd };
      budgets.set(budget.id, budget);
      reserved.set(budget.id, (reserved.get(budget.id) ?? 0) + neededMicroUsd);
    }
    decided[entry.index] = { kind: "admitted", jobs: mine, budget };
  }
  if (undo.length > 0) {
    await trx.deleteFrom("job_events").where("job_id", "in", undo).execute();
    await trx.deleteFrom("jobs").where("id", "in", undo).execute();
  }
  for (const [budgetId, microUsd] of reserved) await commitToBudget(context, trx, budgetId, microUsd, now);
  // A refused request keeps no key: its retry is decided again.
  for (const admission of keysRefused) await trx.deleteFrom("idempotency_keys").where("tenant", "=", admission.tenant).where("key", "=", admission.idempotency!.key).execute();
  for (const entry of open) {
    const outcome = decided[entry.index]!;
    const key = entry.admission.idempotency;
    if (!key || outcome.kind !== "admitted") continue;
    await trx
      .updateTable("idempotency_keys")
      .set({ status: outcome.jobs.some((each) => each.created) ? 201 : 200, job_ids_json: JSON.stringify(outcome.jobs.map((each) => each.job.id)) })
      .where("tenant", "=", entry.admission.tenant)
      .where("key", "=", key.key)
      .execute();
  }
}

function keyName(tenant: string, key: string): string {
  return `${tenant}\u0000${key}`;
}

/** Takes these admissions' keys in one insert (an expired key is free again); the names of those taken. */
async function takeKeys(trx: Db, admissions: readonly Admission[], now: number): Promise<Set<string>> {
  if (admissions.length === 0) return new Set();
  // In key order: two writers taking keys of one tenant take them in the same order.
  const rows = [...admissions]
    .sort((left, right) => (keyName(left.tenant, left.idempotency!.key) < keyName(right.tenant, right.idempotency!.key) ? -1 : 1))
    .map((admission) => ({
      tenant: admission.tenant,
      key: admission.idempotency!.key,
      request_sha256: admission.idempotency!.requestSha256,
      status: 0,
      job_ids_json: "[]",
      batch_id: admission.batchId,
      created_at: now,
      expires_at: now + admission.idempotency!.keepMs,
    }));
  const taken = await trx
    .insertInto("idempotency_keys")
    .values(rows)
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
    .returning(["tenant", "key"])
    .execute();
  return new Set(taken.map((row) => keyName(row.tenant, row.key)));
}

/** Removes keys kept past their time, a bounded number, at most once a minute: the table holds about a day of keys. */
async function sweepExpiredKeys(context: StoreContext, now: number): Promise<void> {
  if (now - (lastSweeps.get(context) ?? Number.NEGATIVE_INFINITY) < KEY_SWEEP_EVERY_MS) return;
  lastSweeps.set(context, now);
  await sql`delete from idempotency_keys where (tenant, key) in (select tenant, key from idempotency_keys where expires_at <= ${now} limit ${sql.lit(KEY_SWEEP_ROWS)})`.execute(context.db);
}
