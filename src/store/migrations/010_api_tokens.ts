/**
 * Migration 10: `mediagate serve` for teams (issue 12). API tokens, kept as
 * the sha256 of the secret (the secret is printed once, at creation, and
 * never stored); each may carry a budget (a `budgets` row, enforced at each
 * send like a command's) and be read-only or admin. A job remembers the
 * token that created it (a token sees only its own jobs unless admin) and
 * where to notify when it ends. The indexes serve the API's newest-first
 * listing, whole store (admin) or one token's.
 */
const statements = (bigint: string) => `
CREATE TABLE api_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  secret_sha256 TEXT NOT NULL UNIQUE,
  admin INTEGER NOT NULL,
  read_only INTEGER NOT NULL,
  budget_id TEXT,
  created_at ${bigint} NOT NULL,
  revoked_at ${bigint}
);
ALTER TABLE jobs ADD COLUMN token_id TEXT;
ALTER TABLE jobs ADD COLUMN notify_url TEXT;
CREATE INDEX jobs_created ON jobs (created_at, id);
CREATE INDEX jobs_token_created ON jobs (token_id, created_at, id)
`;

export const migration010 = {
  version: 10,
  name: "api_tokens",
  sqlite: statements("INTEGER"),
  postgres: statements("BIGINT"),
};
