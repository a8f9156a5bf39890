import { sql } from "kysely";
import type { StoreContext } from "./context.js";

/**
 * Slot pools: how many jobs of a kind may be at a provider at once (held
 * while submitting and running), learned down when the provider pushes back
 * and back up after a quiet period. A claim takes its slots (claims.ts); a
 * transition out of the slot-holding states releases them (transitions.ts).
 */

export interface PoolStatus {
  key: string;
  configuredCapacity: number;
  learnedCapacity: number;
  held: number;
  blockedUntil: number;
}

export async function releaseSlots(context: StoreContext, jobId: string, now: number): Promise<void> {
  await context.db.transaction().execute(async (trx) => {
    await trx.deleteFrom("slot_holds").where("job_id", "=", jobId).execute();
    await trx.updateTable("jobs").set({ slots_held_json: "[]", updated_at: now }).where("id", "=", jobId).execute();
  });
  context.slotReleases++;
}

export async function slotPushback(context: StoreContext, poolKeys: readonly string[], blockedUntil: number, now: number): Promise<void> {
  await context.db.transaction().execute(async (trx) => {
    for (const key of poolKeys) {
      const held = await trx
        .selectFrom("slot_holds")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("pool_key", "=", key)
        .executeTakeFirstOrThrow();
      await trx
        .updateTable("slot_pools")
        .set({
          learned_capacity: context.greatest(1, context.least(sql`learned_capacity`, Number(held.n))),
          blocked_until: context.greatest(sql`blocked_until`, blockedUntil),
          updated_at: now,
        })
        .where("pool_key", "=", key)
        .execute();
    }
  });
}

export async function slotRecover(context: StoreContext, poolKey: string, now: number): Promise<void> {
  const result = await context.db
    .updateTable("slot_pools")
    .set({ learned_capacity: sql<number>`learned_capacity + 1`, updated_at: now })
    .where("pool_key", "=", poolKey)
    .where("learned_capacity", "<", sql<number>`configured_capacity`)
    .where("blocked_until", "<=", now)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) > 0) context.slotReleases++;
}

export async function poolStatus(context: StoreContext): Promise<PoolStatus[]> {
  const pools = await context.db.selectFrom("slot_pools").selectAll().orderBy("pool_key").execute();
  const holds = await context.db
    .selectFrom("slot_holds")
    .select(["pool_key", (eb) => eb.fn.countAll<number>().as("n")])
    .groupBy("pool_key")
    .execute();
  const held = new Map(holds.map((row) => [row.pool_key, Number(row.n)]));
  return pools.map((pool) => ({
    key: pool.pool_key,
    configuredCapacity: Number(pool.configured_capacity),
    learnedCapacity: Number(pool.learned_capacity),
    held: held.get(pool.pool_key) ?? 0,
    blockedUntil: Number(pool.blocked_until),
  }));
}
