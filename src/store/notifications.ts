import { type Compilable, type Kysely, sql } from "kysely";
import type { Reusable } from "./reusable.js";
import { newId } from "../core/ids.js";
import { isTerminal, type JobState } from "../core/job.js";
import type { Db } from "./context.js";
import type { Database, NotificationsTable } from "./schema.js";
import type { JobScope } from "./store.js";

/**
 * The notifications' statements (issue 12, migration 11), beside the store
 * that runs them. The one that owes a notification is written by the job's
 * change itself (see transitions.ts); these take, record and read.
 */

/**
 * Which changes of a job owe a notification (issue 12), from the entry
 * point's MEDIAGATE_NOTIFY_URL and MEDIAGATE_NOTIFY_EVENTS. A job's own
 * `notify_url` is always honoured; `defaultUrl` serves the jobs without one.
 */
export interface NotificationPolicy {
  defaultUrl: string | null;
  /** `terminal`: a job's end; `all`: every change of state after it was queued. */
  events: "terminal" | "all";
}

/** A notification a job owes, as stored (migration 11). */
export interface Notification {
  /** The Standard Webhooks `webhook-id`: the same on every attempt. */
  id: string;
  jobId: string;
  /** `job.succeeded`, `job.failed`, … (`job.<state>`), or `batch.completed` (sent for `batchId`). */
  type: string;
  /** The job's batch (null: none). */
  batchId: string | null;
  url: string;
  /** The bytes every attempt sends, kept at the first attempt; null before it. */
  body: string | null;
  /** Attempts claimed so far, the one in flight included. */
  attempts: number;
  /** When the job changed (the event's time). */
  createdAt: number;
  nextAttemptAt: number;
  lastAttemptAt: number | null;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: number | null;
  givenUpAt: number | null;
}

/** How one delivery attempt ended, with the job event that records it. */
export interface NotificationAttempt {
  id: string;
  /** The attempt's number as claimed: the record applies only while the notification is still at it. */
  attempt: number;
  at: number;
  /** The receiver's HTTP status, when it answered. */
  status: number | null;
  /** A stable code or short text when it did not answer with 2xx (`http_500`, `ECONNREFUSED`, `unsafe_url`, …). */
  error: string | null;
  outcome: { kind: "delivered" } | { kind: "retry"; nextAttemptAt: number } | { kind: "given_up" };
  event: { reason: string; detail: unknown };
}

/** Until the entry point says otherwise: a job's end, told to its own `notify_url` only. */
export const DEFAULT_NOTIFICATION_POLICY: NotificationPolicy = { defaultUrl: null, events: "terminal" };

/** The type of the notification a move from `from` (null: not known here) to `to` owes, or null when it owes none. */
export function owedNotificationType(policy: NotificationPolicy, from: JobState | null, to: JobState): string | null {
  if (from === to) return null;
  if (!isTerminal(to) && policy.events !== "all") return null;
  return `job.${to}`;
}

/** A `webhook-id`: unique, and sortable by when the job changed. */
export function newNotificationId(now: number): string {
  return newId("msg", now);
}

/** A notification owed from `at`, due at once; written in the transaction of the change that owes it. */
export async function insertNotification(trx: Db, row: { id: string; jobId: string; batchId: string | null; type: string; url: string; at: number }): Promise<void> {
  await trx
    .insertInto("notifications")
    .values({ id: row.id, job_id: row.jobId, batch_id: row.batchId, event_type: row.type, url: row.url, body_json: null, attempts: 0, created_at: row.at, next_attempt_at: row.at })
    .execute();
}

/** A job that has not ended: what keeps its batch from being complete. */
const UNFINISHED_STATES = ["queued", "submitting", "running", "capturing"] as const;

/** The type of the notification a batch's end owes (issue 37, part 4). */
export const BATCH_COMPLETED = "batch.completed";

/**
 * Owes the batch's `batch.completed` when the job that just ended (written
 * in `trx`) was its last unfinished one: one statement, whose look for an
 * unfinished job of the batch reads `jobs_batch_queue` (four short ranges,
 * empty when none is left), never the batch's rows; and whose insert is
 * skipped when the batch already has one (migration 23's unique
 * `completes_batch`), so a batch is told once, a job resubmitted after it
 * ended included. PostgreSQL: the caller holds the batch's lock (see
 * `lockBatchEnd`), so of two engines ending a batch's last two jobs at once
 * the second sees the first's end.
 */
export async function oweBatchCompletion(context: { reusable: Reusable }, trx: Db, row: { id: string; batchId: string; url: string; at: number }): Promise<void> {
  await context.reusable(
    trx,
    "oweBatchCompletion",
    (slot) => {
      const text = (name: string) => sql`cast(${slot(name)} as text)`;
      const at = sql`cast(${slot("at")} as bigint)`;
      const unfinished = sql.join(UNFINISHED_STATES.map((state) => sql.lit(state)));
      const statement = sql`insert into notifications (id, job_id, batch_id, completes_batch, event_type, url, body_json, attempts, created_at, next_attempt_at)
select ${text("id")}, ${text("jobId")}, ${text("batchId")}, ${text("batchId")}, ${sql.lit(BATCH_COMPLETED)}, ${text("url")}, null, 0, ${at}, ${at}
where not exists (select 1 from jobs where batch_id = ${text("batchId")} and state in (${unfinished}))
on conflict (completes_batch) do nothing`;
      return { compile: () => statement.compile(trx) } as Compilable<never>;
    },
    { id: newNotificationId(row.at), jobId: row.id, batchId: row.batchId, url: row.url, at: row.at },
  );
}

/**
 * PostgreSQL: the lock of a batch's end, held until the transaction that
 * ends one of its jobs commits. Ends of one batch's jobs take it one at a
 * time, so each one's look for unfinished jobs (a later statement: READ
 * COMMITTED reads what was committed before it) sees the ends committed
 * before it; without it, two engines ending the last two jobs at once would
 * each see the other's still running, and neither tell the batch's end.
 * SQLite writes one transaction at a time already.
 */
export async function lockBatchEnd(trx: Db, batchId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`mediagate:batch-end:${batchId}`}))`.execute(trx);
}

/**
 * The notifications still owed: the predicates of `notifications_due`
 * (a partial index), repeated so that every planner uses it.
 */
export function owedNotifications(db: Db) {
  return db.selectFrom("notifications").where("delivered_at", "is", null).where("given_up_at", "is", null);
}

/**
 * The notifications still owed by one command's jobs: its batch's through
 * `notifications_batch_due`, its few jobs' through `notifications_job`.
 */
export function owedNotificationsIn(db: Db, scope: JobScope | null, slot?: <T>(name: string) => T) {
  const owed = owedNotifications(db);
  if (scope === null) return owed;
  // In a reusable statement the scope's values are slots (named as the store's scope slots: batchId, id0, id1, …).
  if ("batchId" in scope) return owed.where("batch_id", "=", slot ? slot<string>("batchId") : scope.batchId);
  if (scope.jobIds.length === 0) return owed.where(sql<boolean>`1 = 0`);
  return owed.where("job_id", "in", slot ? scope.jobIds.map((_, index) => slot<string>(`id${index}`)) : [...scope.jobIds]);
}

export async function claimDueNotifications(db: Db, dialect: "sqlite" | "postgres", now: number, limit: number, leaseMs: number, scope: JobScope | null = null): Promise<Notification[]> {
  if (!Number.isSafeInteger(limit) || limit <= 0) return [];
  // graphile-worker's claim: the due rows in due order, locked (PostgreSQL: another engine's are skipped,
  // and one another engine just claimed is due no more when its lock is taken), the attempt counted at claim.
  let due = owedNotificationsIn(db, scope).select("id").where("next_attempt_at", "<=", now);
  // A command's few jobs' notifications are taken as found (by notifications_job), not sorted: all that are due go.
  if (scope === null || "batchId" in scope) due = due.orderBy("next_attempt_at");
  due = due.limit(sql.lit(limit));
  if (dialect === "postgres") due = due.forUpdate().skipLocked();
  const rows = await db
    .updateTable("notifications")
    .set({ attempts: sql<number>`attempts + 1`, next_attempt_at: now + leaseMs })
    .where("id", "in", due)
    .returningAll()
    .execute();
  return rows.map(notificationOf).sort((left, right) => left.createdAt - right.createdAt || (left.id < right.id ? -1 : 1));
}

/** How many notifications `scope`'s jobs still owe, and how many of those were never tried. */
export async function notificationsOwed(db: Db, scope: JobScope | null): Promise<{ owed: number; neverTried: number }> {
  const row = await owedNotificationsIn(db, scope)
    .select((eb) => [eb.fn.countAll<number>().as("owed"), eb.fn.sum<number>(sql<number>`case when attempts = 0 then 1 else 0 end`).as("never_tried")])
    .executeTakeFirstOrThrow();
  return { owed: Number(row.owed), neverTried: Number(row.never_tried ?? 0) };
}

export async function keepNotificationBody(db: Db, id: string, body: string): Promise<string> {
  const row = await db
    .updateTable("notifications")
    .set({ body_json: sql<string>`coalesce(body_json, ${body})` })
    .where("id", "=", id)
    .returning("body_json")
    .executeTakeFirst();
  return row?.body_json ?? body;
}

export async function recordNotificationAttempt(db: Kysely<Database>, attempt: NotificationAttempt): Promise<boolean> {
  const { outcome } = attempt;
  return db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable("notifications")
      .set({
        last_attempt_at: attempt.at,
        last_status: attempt.status,
        last_error: attempt.error,
        ...(outcome.kind === "delivered" ? { delivered_at: attempt.at } : {}),
        ...(outcome.kind === "given_up" ? { given_up_at: attempt.at } : {}),
        ...(outcome.kind === "retry" ? { next_attempt_at: outcome.nextAttemptAt } : {}),
      })
      .where("id", "=", attempt.id)
      .where("attempts", "=", attempt.attempt)
      .where("delivered_at", "is", null)
      .where("given_up_at", "is", null)
      .returning("job_id")
      .executeTakeFirst();
    if (!updated) return false;
    // The job's state is unchanged by a notification: the event is written from and to the state it is in now.
    await trx
      .insertInto("job_events")
      .columns(["job_id", "at", "from_state", "to_state", "reason", "detail_json"])
      .expression((eb) =>
        eb
          .selectFrom("jobs")
          .select([
            "id",
            sql<number>`cast(${attempt.at} as bigint)`.as("at"),
            "state as from_state",
            "state as to_state",
            sql<string>`cast(${attempt.event.reason} as text)`.as("reason"),
            sql<string>`cast(${JSON.stringify(attempt.event.detail)} as text)`.as("detail_json"),
          ])
          .where("id", "=", updated.job_id),
      )
      .execute();
    return true;
  });
}

export async function notificationsOf(db: Db, jobId: string): Promise<Notification[]> {
  const rows = await db.selectFrom("notifications").selectAll().where("job_id", "=", jobId).orderBy("created_at").orderBy("id").execute();
  return rows.map(notificationOf);
}

function numberOrNull(value: number | string | null): number | null {
  return value === null ? null : Number(value);
}

function notificationOf(row: NotificationsTable): Notification {
  return {
    id: row.id,
    jobId: row.job_id,
    batchId: row.batch_id,
    type: row.event_type,
    url: row.url,
    body: row.body_json,
    attempts: Number(row.attempts),
    createdAt: Number(row.created_at),
    nextAttemptAt: Number(row.next_attempt_at),
    lastAttemptAt: numberOrNull(row.last_attempt_at),
    lastStatus: numberOrNull(row.last_status),
    lastError: row.last_error,
    deliveredAt: numberOrNull(row.delivered_at),
    givenUpAt: numberOrNull(row.given_up_at),
  };
}
