/**
 * Migration 21: queue positions (issue 37, part 1). Each job queued gets
 * `queue_rank`, one more than the last rank queued for its tenant at its
 * provider. A job's position in its tenant's line is its rank less the
 * rank at the head, plus one: two seeks of `jobs_queue_rank`, whatever the
 * length of the queue. Ranks given by two transactions at once may repeat,
 * and a job that left out of turn leaves a gap: a position is an estimate,
 * off by those few. A job held by its budget (\`blocked_code\`) waits for no
 * slot and is not in the index: it would hold the head of its line while
 * the jobs behind it leave, and every position behind it would count them.
 */
const statements = (where: string) => `
ALTER TABLE jobs ADD COLUMN queue_rank ${where === "sqlite" ? "INTEGER" : "BIGINT"};
CREATE INDEX jobs_queue_rank ON jobs (state, provider, tenant, queue_rank) WHERE blocked_code IS NULL
`;

export const migration021 = {
  version: 21,
  name: "queue_rank",
  sqlite: statements("sqlite"),
  postgres: statements("postgres"),
};
