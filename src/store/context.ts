import { type Kysely, type RawBuilder, sql, type Transaction } from "kysely";
import { DEFAULT_NOTIFICATION_POLICY } from "./notifications.js";
import { type Reusable, reusableStatements } from "./reusable.js";
import type { Database } from "./schema.js";
import type { NotificationPolicy } from "./store.js";
import type { WorkSignals } from "./work-signals.js";

export type Db = Kysely<Database> | Transaction<Database>;

/**
 * What every family of the store's statements (jobs.ts, transitions.ts,
 * claims.ts, …) takes: one per store object. The few places where the
 * dialects differ (row locks for the claim and the slot take, scalar
 * min/max) are marked; everything else is the same SQL.
 */
export interface StoreContext {
  readonly db: Kysely<Database>;
  readonly dialect: "sqlite" | "postgres";
  /** This store object's statements kept compiled (see `Reusable`). */
  readonly reusable: Reusable;
  /** Which changes owe a notification (see `Store.setNotificationPolicy`). */
  notificationPolicy: NotificationPolicy;
  /** Slot holds this store deleted and pool capacity it recovered, counted (see `Store.slotReleases`). */
  slotReleases: number;
  /** Tells other processes of new work, sent when `db`'s transaction commits (at once outside one). */
  announce(db: Db): Promise<void>;
  /**
   * The rows a read inside a transaction is about to change, locked: on
   * PostgreSQL by `FOR UPDATE` (`SKIP LOCKED` passes over rows another
   * engine holds); SQLite's write transaction (begun IMMEDIATE) holds the
   * whole database already.
   */
  locked<Q extends { forUpdate(): Q; skipLocked(): Q }>(query: Q, options?: { skipLocked?: boolean }): Q;
  /** Scalar min/max: SQLite spells them min()/max(), PostgreSQL least()/greatest(). */
  least(a: unknown, b: unknown): RawBuilder<number>;
  greatest(a: unknown, b: unknown): RawBuilder<number>;
}

export function storeContext(
  db: Kysely<Database>,
  dialect: "sqlite" | "postgres",
  /** Other processes told of new work (PostgreSQL's LISTEN/NOTIFY); none for an embedded store. */
  signals: WorkSignals | null,
  /** Told the SQL of each statement `reusable` compiles, for a driver that prepares them (PostgreSQL's named statements). */
  onReusable: ((sql: string) => void) | null,
): StoreContext {
  return {
    db,
    dialect,
    reusable: reusableStatements(onReusable),
    notificationPolicy: DEFAULT_NOTIFICATION_POLICY,
    slotReleases: 0,
    async announce(executor) {
      if (signals) await sql`select pg_notify(${signals.channel}, ${signals.sender})`.execute(executor);
    },
    locked(query, options = {}) {
      if (dialect !== "postgres") return query;
      return options.skipLocked ? query.forUpdate().skipLocked() : query.forUpdate();
    },
    least(a, b) {
      return dialect === "postgres" ? sql<number>`least(${a}, ${b})` : sql<number>`min(${a}, ${b})`;
    },
    greatest(a, b) {
      return dialect === "postgres" ? sql<number>`greatest(${a}, ${b})` : sql<number>`max(${a}, ${b})`;
    },
  };
}
