/**
 * Migration 19: fair share between tenants (issue 35, store/fair-queue.ts).
 *
 * `jobs_tenant_queue` orders each provider's queue by tenant, then due time:
 * the tenants waiting at a provider are found by a skip scan of it (an index
 * seek per tenant, never a read of the jobs between), each tenant's first
 * due jobs are one range of it, and what each has in flight is counted from
 * its submitting and running entries. An API token's `weight` (default 1) is
 * its share: a tenant of weight 2 may have twice as many jobs in flight at a
 * provider before the others go first.
 *
 * On PostgreSQL the index's tenant compares as "C", and so do the
 * statements that read it: `jobs_tenant_ref` (tenant, ref) also gives the
 * tenants in order, and the planner, costing the two alike, walked it and
 * filtered its rows instead (up to the whole table per step). Only this index
 * gives tenants in "C" order.
 */
const statements = (tenant: string) => `
CREATE INDEX jobs_tenant_queue ON jobs (state, provider, ${tenant}, next_attempt_at, id);
ALTER TABLE api_tokens ADD COLUMN weight INTEGER NOT NULL DEFAULT 1
`;

export const migration019 = {
  version: 19,
  name: "fair_share",
  sqlite: statements("tenant"),
  postgres: statements(`tenant COLLATE "C"`),
};
