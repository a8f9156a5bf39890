/**
 * Migration 14: the routed jobs' queue index keeps its state as a column, not
 * in its predicate.
 *
 * Migration 8's `jobs_routed_queue` was partial on `state = 'queued' AND
 * route_json IS NOT NULL`. To decide whether a statement can use a partial
 * index, SQLite compares the statement's terms with the index's predicate,
 * and a term that binds the same column (`state = ?`, `state IN (?, ?)`) is
 * compared by its bound value: the statement is then planned again each time
 * new values are bound, that is on every run. Every hot statement on `jobs`
 * binds a state (the queue's heads, a step's due jobs, every transition), so
 * each run was parsed and planned again: in a 200-job batch the six-branch
 * read of the queue's heads took 576 µs a call, 176 µs after this change; a
 * one-row lookup by state and provider 22.5 µs, 2.6 µs after.
 *
 * With `route_json IS NOT NULL` alone as the predicate, no bound value is
 * compared with a constant, and the state leads the key: a halted provider's
 * routed jobs are still one range of the index (`routedQueued`). On
 * PostgreSQL a prepared statement's generic plan, made for any state, can use
 * it too.
 */
const statements = `
DROP INDEX jobs_routed_queue;
CREATE INDEX jobs_routed_queue ON jobs (state, provider, next_attempt_at, id) WHERE route_json IS NOT NULL
`;

export const migration014 = {
  version: 14,
  name: "routed_queue_predicate",
  sqlite: statements,
  postgres: statements,
};
