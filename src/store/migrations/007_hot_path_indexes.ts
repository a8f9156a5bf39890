/**
 * Migration 7: an index for every query the engine and a waiting command run
 * on each step, so that none of them reads in proportion to the jobs in the
 * store or the batch (issue 10). Each is checked by test/store/query-plans.test.ts.
 *
 * - each provider's queue, in due order, in the whole store and in one
 *   batch (`state, provider, next_attempt_at, id`): a claim reads the head
 *   of each and never walks a halted provider's queue;
 * - an engine's own jobs (`lease_owner, state, next_attempt_at`): polls,
 *   lease renewal and release;
 * - charges the provider settles later (`charge_state, next_attempt_at`):
 *   finished jobs are most of a store, and only the few pending are read;
 * - what changed in a batch since a moment (`batch_id, updated_at`): a
 *   waiting command follows its batch by what changed, not by re-reading it;
 * - a job's slot holds (`slot_holds.job_id`), released on every move.
 *
 * The older `jobs (state, next_attempt_at)`, `jobs (batch_id)` and
 * `jobs (batch_id, state, next_attempt_at)` are prefixes of these and go:
 * every index is one more write on each change of a job.
 */
const statements = `
DROP INDEX jobs_batch_state_due;
DROP INDEX jobs_state_due;
DROP INDEX jobs_batch;
CREATE INDEX slot_holds_job ON slot_holds (job_id);
CREATE INDEX jobs_batch_queue ON jobs (batch_id, state, provider, next_attempt_at, id);
CREATE INDEX jobs_queue ON jobs (state, provider, next_attempt_at, id);
CREATE INDEX jobs_owner_due ON jobs (lease_owner, state, next_attempt_at);
CREATE INDEX jobs_settling ON jobs (charge_state, next_attempt_at);
CREATE INDEX jobs_batch_updated ON jobs (batch_id, updated_at)
`;

export const migration007 = {
  version: 7,
  name: "hot_path_indexes",
  sqlite: statements,
  postgres: statements,
};
