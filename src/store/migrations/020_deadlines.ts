/**
 * Migration 20: deadlines (issue 37, part 2: `cancel_after_s`, the API's
 * `Cancel-After`). `deadline_at` is when a job stops being wanted (ms, null:
 * never). A queued job past it is cancelled unsent: the engine finds them by
 * `jobs_deadline`, an index of the queued jobs' deadlines read as a range
 * (only jobs that have one are in it), never a scan of the queue.
 */
const statements = (where: string) => `
ALTER TABLE jobs ADD COLUMN deadline_at ${where === "sqlite" ? "INTEGER" : "BIGINT"};
CREATE INDEX jobs_deadline ON jobs (state, deadline_at) WHERE deadline_at IS NOT NULL
`;

export const migration020 = {
  version: 20,
  name: "deadlines",
  sqlite: statements("sqlite"),
  postgres: statements("postgres"),
};
