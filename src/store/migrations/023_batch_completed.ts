/**
 * Migration 23: `batch.completed` (issue 37, part 4), one notification per
 * batch. A notification that tells a batch's end names that batch in
 * `completes_batch` (null on every job notification); the unique index on it
 * lets exactly one be written, however many engines end a batch's last jobs
 * at once: the one that writes it second finds it there (ON CONFLICT DO
 * NOTHING). A unique index counts no two nulls as equal, on both stores, so
 * the job notifications are not constrained; and it is not partial, so no
 * statement compares a bound value with an index predicate (see
 * test/store/query-plans.test.ts).
 *
 * Whether a batch has a job left unfinished is read from `jobs_batch_queue`
 * (batch_id, state, …): four short ranges, empty once the batch is done.
 */
const statements = `
ALTER TABLE notifications ADD COLUMN completes_batch TEXT;
CREATE UNIQUE INDEX notifications_batch_completed ON notifications (completes_batch)
`;

export const migration023 = {
  version: 23,
  name: "batch_completed",
  sqlite: statements,
  postgres: statements,
};
