/**
 * Migration 22: a job's trace (issue 37, part 3: OpenTelemetry traces). The
 * job span starts at the admission in one process and may end in another (a
 * worker on PostgreSQL, a process that resumed the job): its trace id and
 * span id are chosen at the admission and kept here, so every process parents
 * its provider requests' spans to it and the one that ends the job emits the
 * job span under the same ids. `trace_parent_span_id` is the span of the API
 * request's caller (its `traceparent`). All null: the job is not traced.
 * Nothing reads jobs by these columns, so no index.
 */
const statements = `
ALTER TABLE jobs ADD COLUMN trace_id TEXT;
ALTER TABLE jobs ADD COLUMN trace_span_id TEXT;
ALTER TABLE jobs ADD COLUMN trace_parent_span_id TEXT
`;

export const migration022 = {
  version: 22,
  name: "job_trace",
  sqlite: statements,
  postgres: statements,
};
