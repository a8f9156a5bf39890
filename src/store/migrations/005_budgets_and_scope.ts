/**
 * Migration 5: budgets held in the store, and the index a command's engine
 * needs to work only on its own batch.
 *
 * A budget is a row with a ceiling and what is committed against it: the
 * estimate of every job of it that was sent and not yet charged, plus the
 * charges of those that were. A job holds its share (`budget_held_micro_usd`)
 * from the claim that sends it; a submit that was never accepted gives it
 * back; a known charge replaces it. Every engine on the store checks the
 * ceiling in the claim's transaction, so a budget holds however many
 * processes send its jobs.
 *
 * `blocked_code` says, as a stable code, why an unfinished job cannot move
 * on by itself (`over_budget`, `output_unwritable`), so a waiting command can
 * stop and say so instead of waiting for ever. Any state change clears it.
 */
const statements = (bigint: string) => `
CREATE TABLE budgets (
  id TEXT PRIMARY KEY,
  ceiling_micro_usd ${bigint} NOT NULL,
  committed_micro_usd ${bigint} NOT NULL DEFAULT 0,
  updated_at ${bigint} NOT NULL
);
ALTER TABLE jobs ADD COLUMN budget_id TEXT;
ALTER TABLE jobs ADD COLUMN budget_held_micro_usd ${bigint} NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN blocked_code TEXT;
CREATE INDEX jobs_batch_state_due ON jobs (batch_id, state, next_attempt_at)
`;

export const migration005 = {
  version: 5,
  name: "budgets_and_scope",
  sqlite: statements("INTEGER"),
  postgres: statements("BIGINT"),
};
