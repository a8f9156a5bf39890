/**
 * Migration 4: when a job's submit request started to leave. A job found in
 * `submitting` after a crash without it never sent anything (it was still
 * waiting for a rate token, say) and can be queued again safely, even on a
 * provider without idempotency; with it, the outcome is unknown.
 */
const statements = (bigint: string) => `
ALTER TABLE jobs ADD COLUMN submit_sent_at ${bigint}
`;

export const migration004 = {
  version: 4,
  name: "submit_sent_at",
  sqlite: statements("INTEGER"),
  postgres: statements("BIGINT"),
};
