import type { Job } from "../core/job.js";
import type { StoreContext } from "./context.js";
import { getJob } from "./jobs.js";
import { inScope } from "./scope.js";
import type { JobScope } from "./store.js";

/** The leases under which an engine owns the jobs it sent: renewed, released, and taken over once expired or when their owner is known dead. */

export async function adoptOrphans(context: StoreContext, owner: string, now: number, leaseMs: number, isDeadOwner: (owner: string) => boolean, scope: JobScope | null = null): Promise<Job[]> {
  let candidatesQuery = context.db
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
    let query = context.db
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
    const job = await getJob(context, candidate.id);
    if (job) adopted.push(job);
  }
  return adopted;
}

export async function renewLeases(context: StoreContext, owner: string, leaseExpiresAt: number): Promise<void> {
  await context.db
    .updateTable("jobs")
    .set({ lease_expires_at: leaseExpiresAt })
    .where("lease_owner", "=", owner)
    .where("state", "in", ["submitting", "running", "capturing"])
    .execute();
}

export async function releaseLeases(context: StoreContext, owner: string): Promise<void> {
  await context.db
    .updateTable("jobs")
    .set({ lease_owner: null, lease_expires_at: null })
    .where("lease_owner", "=", owner)
    .execute();
}
