import { sql } from "kysely";
import type { Job } from "../core/job.js";
import type { Db, StoreContext } from "./context.js";
import { rowToJob } from "./rows.js";

/**
 * Budgets: what the jobs under one may commit (estimates of those sent,
 * then their charges) against its ceiling. A claim commits a job's estimate
 * (claims.ts), a transition what changes of it (transitions.ts), a settled
 * charge what it replaces (here, with the charge's ledger line).
 */

export interface BudgetStatus {
  id: string;
  ceilingMicroUsd: number;
  /** Estimates held by sent, not yet charged jobs, plus the charges of charged ones. */
  committedMicroUsd: number;
}

export function budgetStatusOf(row: { id: string; ceiling_micro_usd: number; committed_micro_usd: number }): BudgetStatus {
  return { id: row.id, ceilingMicroUsd: Number(row.ceiling_micro_usd), committedMicroUsd: Number(row.committed_micro_usd) };
}

export async function setBudget(context: StoreContext, id: string, ceilingMicroUsd: number, now: number): Promise<BudgetStatus> {
  await context.db
    .insertInto("budgets")
    .values({ id, ceiling_micro_usd: ceilingMicroUsd, committed_micro_usd: 0, updated_at: now })
    .onConflict((conflict) => conflict.column("id").doUpdateSet({ ceiling_micro_usd: ceilingMicroUsd, updated_at: now }))
    .execute();
  return (await budget(context, id))!;
}

export async function budget(context: StoreContext, id: string): Promise<BudgetStatus | null> {
  const row = await context.db.selectFrom("budgets").selectAll().where("id", "=", id).executeTakeFirst();
  return row ? budgetStatusOf(row) : null;
}

/**
 * Puts these jobs, where still queued and under another budget or none, under `budgetId` (a re-run's unsent jobs), each
 * holding its estimate there from now, as an admission's would (what it held in another budget is given back to it).
 */
export async function assignBudget(context: StoreContext, budgetId: string, jobIds: readonly string[], now: number): Promise<void> {
  // Chunked: a batch of thousands would pass SQLite's limit of bound parameters in one IN list.
  for (let start = 0; start < jobIds.length; start += 500) {
    await context.db.transaction().execute(async (trx) => {
      const moving = await context
        .locked(
          trx
            .selectFrom("jobs")
            .select(["id", "budget_id", "budget_held_micro_usd", "estimate_micro_usd"])
            .where("id", "in", jobIds.slice(start, start + 500))
            .where("state", "=", "queued")
            .where((eb) => eb.or([eb("budget_id", "is", null), eb("budget_id", "<>", budgetId)])),
        )
        .execute();
      let reserved = 0;
      for (const job of moving) {
        const held = Number(job.budget_held_micro_usd);
        if (job.budget_id !== null && held !== 0) await commitToBudget(context, trx, job.budget_id, -held, now);
        const estimate = job.estimate_micro_usd === null ? 0 : Number(job.estimate_micro_usd);
        await trx.updateTable("jobs").set({ budget_id: budgetId, budget_held_micro_usd: estimate, updated_at: now }).where("id", "=", job.id).execute();
        reserved += estimate;
      }
      await commitToBudget(context, trx, budgetId, reserved, now);
    });
  }
}

export async function commitToBudget(context: StoreContext, trx: Db, budgetId: string, deltaMicroUsd: number, now: number): Promise<void> {
  if (deltaMicroUsd === 0) return;
  await context.reusable(
    trx,
    "commitToBudget",
    (slot) =>
      trx
        .updateTable("budgets")
        .set({ committed_micro_usd: sql<number>`committed_micro_usd + ${slot<number>("delta")}`, updated_at: slot<number>("now") })
        .where("id", "=", slot<string>("id")),
    { delta: deltaMicroUsd, now, id: budgetId },
  );
}

export async function settleCharge(context: StoreContext, jobId: string, charge: { microUsd: number; source: string }, now: number): Promise<Job | null> {
  return context.db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("jobs")
      .set({ charge_micro_usd: charge.microUsd, charge_source: charge.source, charge_state: "settled", updated_at: now })
      .where("id", "=", jobId)
      .where("charge_state", "in", ["pending", "unavailable"])
      .returningAll()
      .executeTakeFirst();
    if (!row) return null;
    let job = rowToJob(row);
    if (job.budgetId && job.budgetHeldMicroUsd !== charge.microUsd) {
      await commitToBudget(context, trx, job.budgetId, charge.microUsd - job.budgetHeldMicroUsd, now);
      await trx.updateTable("jobs").set({ budget_held_micro_usd: charge.microUsd }).where("id", "=", jobId).execute();
      job = { ...job, budgetHeldMicroUsd: charge.microUsd };
    }
    await trx
      .insertInto("ledger")
      .values({ job_id: jobId, provider: job.provider, model: job.model, micro_usd: charge.microUsd, source: charge.source, at: now })
      .onConflict((conflict) => conflict.column("job_id").doNothing())
      .execute();
    await trx
      .insertInto("job_events")
      .values({ job_id: jobId, at: now, from_state: job.state, to_state: job.state, reason: `charge settled: ${charge.microUsd} micro-USD (${charge.source})`, detail_json: null })
      .execute();
    return job;
  });
}
