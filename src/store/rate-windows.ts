import { sql } from "kysely";
import type { RateWindow } from "../core/provider-id.js";
import type { StoreContext } from "./context.js";

/** Sliding rate windows shared by every engine on the store (see `Store.takeRateToken`): when a request counts, and the statements that count it. */

/** How many requests a rate window counts now, against its limit. */
export interface RateWindowUsage {
  key: string;
  used: number;
  limit: number;
  windowMs: number;
}

export interface RateToken {
  /** One rate event per window. */
  eventIds: number[];
  /** When the request was stamped as sent. */
  at: number;
}

export type RateTake = { granted: true; token: RateToken } | { granted: false; waitMs: number };

/**
 * The latest a granted request can arrive at the provider after its token:
 * the engine sends it within `RATE_SEND_BOUND_MS` of the token or not at all,
 * and fetch gives up 30 s after sending.
 */
export const RATE_ARRIVAL_BOUND_MS = 90_000;
/** A granted request must leave within this long of its token (a slow store write before a submit), or it is not sent. */
export const RATE_SEND_BOUND_MS = 60_000;
/**
 * A request never answered (its engine died) arrived at the latest
 * `RATE_ARRIVAL_BOUND_MS` after its token, so it leaves a window of
 * `windowMs` by then plus the window: it stops counting after that, not
 * after a fixed ten minutes (which kept E's 4 a minute closed long after a crash).
 */
export function rateUnansweredExpiryMs(windowMs: number): number {
  return RATE_ARRIVAL_BOUND_MS + windowMs;
}
/** When a full window's next leaver is still in flight, look again after this long. */
export const RATE_IN_FLIGHT_RECHECK_MS = 1_000;

export async function takeRateToken(context: StoreContext, windows: readonly RateWindow[], now: number | (() => number)): Promise<RateTake> {
  if (windows.length === 0) return { granted: true, token: { eventIds: [], at: typeof now === "function" ? now() : now } };
  return context.db.transaction().execute(async (trx): Promise<RateTake> => {
    if (context.dialect === "postgres") {
      // Serialise takers of the same windows across workers.
      for (const window of windows) await sql`select pg_advisory_xact_lock(hashtext(${window.key}))`.execute(trx);
    }
    // Read the time once the lock is held: a time taken before waiting for it would stamp the
    // request too early, and the window would let more through than the provider allows.
    const at = typeof now === "function" ? now() : now;
    let waitMs = 0;
    for (const window of windows) {
      const since = at - window.windowMs;
      await trx
        .deleteFrom("rate_events")
        .where("window_key", "=", window.key)
        .where((eb) =>
          eb.or([
            eb("answered_at", "<=", since),
            eb.and([eb("answered_at", "is", null), eb("at", "<=", at - rateUnansweredExpiryMs(window.windowMs))]),
          ]),
        )
        .execute();
      const inWindow = await trx
        .selectFrom("rate_events")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("window_key", "=", window.key)
        .executeTakeFirstOrThrow();
      if (Number(inWindow.n) >= window.limit) {
        // The window has room again once enough of its earliest-answered requests fall out of it;
        // if one of those is still in flight, when is unknown: look again shortly.
        const excess = Number(inWindow.n) - window.limit + 1;
        const leaving = await trx
          .selectFrom("rate_events")
          .select("answered_at")
          .where("window_key", "=", window.key)
          .orderBy(sql`coalesce(answered_at, ${Number.MAX_SAFE_INTEGER})`)
          .limit(1)
          .offset(excess - 1)
          .executeTakeFirstOrThrow();
        const leavesIn =
          leaving.answered_at === null ? RATE_IN_FLIGHT_RECHECK_MS : Number(leaving.answered_at) + window.windowMs - at + 1;
        waitMs = Math.max(waitMs, leavesIn);
      }
    }
    if (waitMs > 0) return { granted: false, waitMs };
    const eventIds: number[] = [];
    for (const window of windows) {
      const row = await trx.insertInto("rate_events").values({ window_key: window.key, at, answered_at: null }).returning("id").executeTakeFirstOrThrow();
      eventIds.push(Number(row.id));
    }
    return { granted: true, token: { eventIds, at } };
  });
}

export async function answerRateToken(context: StoreContext, token: RateToken, at: number): Promise<void> {
  if (token.eventIds.length === 0) return;
  await context.db.updateTable("rate_events").set({ answered_at: Math.max(at, token.at) }).where("id", "in", token.eventIds).execute();
}

export async function rateWindowUsage(context: StoreContext, windows: readonly RateWindow[], now: number): Promise<RateWindowUsage[]> {
  const usage: RateWindowUsage[] = [];
  for (const window of windows) {
    // What takeRateToken would still count: answered within the window, or unanswered and not yet expired.
    const row = await context.db
      .selectFrom("rate_events")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("window_key", "=", window.key)
      .where((eb) =>
        eb.or([eb("answered_at", ">", now - window.windowMs), eb.and([eb("answered_at", "is", null), eb("at", ">", now - rateUnansweredExpiryMs(window.windowMs))])]),
      )
      .executeTakeFirstOrThrow();
    usage.push({ key: window.key, used: Number(row.n), limit: window.limit, windowMs: window.windowMs });
  }
  return usage;
}
