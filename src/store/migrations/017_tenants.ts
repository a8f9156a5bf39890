/**
 * Migration 17: a ref is unique per tenant, not per store (issue 35).
 *
 * `mediagate serve` is shared by many teams: each API token is a tenant, and
 * the local operator (the CLI, the library, the API without tokens) one
 * more. Two tenants naming a job `job-1` make two jobs; a ref taken by
 * another tenant is neither refused nor revealed. `tenant` is the creating
 * token's id, or `local`: every stored job keeps its ref under the tenant it
 * was created by (`token_id`), so no ref is lost or changed.
 *
 * The unique index moves from `ref` to `(tenant, ref)`. PostgreSQL drops the
 * constraint; SQLite cannot drop a column's UNIQUE, so its `jobs` table is
 * rebuilt (created anew, rows copied, the old one dropped, the new one
 * renamed, its indexes made again), with foreign keys off for the migration
 * (`sqliteForeignKeysOff`: job_events, outputs, slot_holds and ledger refer
 * to jobs, and would refuse the drop; `PRAGMA foreign_key_check` must find
 * nothing before the migration commits).
 *
 * A tenant's listing and its search by the start of a ref read
 * `jobs_tenant_created` and `jobs_tenant_ref` (which replace the token
 * indexes of migrations 10 and 12); an admin's search by the start of a ref
 * reads `jobs_ref` (SQLite) or `jobs_ref_prefix` (PostgreSQL, migration 12).
 */

/** Every column of `jobs` after migration 16, in the table's order, and `tenant`. */
const COLUMNS = [
  "id", "ref", "batch_id", "provider", "model", "operation", "body_json", "facts_json", "warnings_json", "state", "reason",
  "attempts", "idempotency_key", "provider_job_id", "handles_json", "provider_status", "estimate_micro_usd", "estimate_source",
  "charge_micro_usd", "charge_source", "charge_state", "error_code", "error_message", "error_detail_json", "out_dir",
  "lease_owner", "lease_expires_at", "next_attempt_at", "created_at", "updated_at", "submitted_at", "provider_done_at",
  "finished_at", "tracking_deadline_at", "slots_held_json", "last_pending_elapsed_ms", "poll_failures", "submit_sent_at",
  "budget_id", "budget_held_micro_usd", "blocked_code", "route_json", "token_id", "notify_url",
].join(", ");

const sqlite = `
CREATE TABLE jobs_by_tenant (
  id TEXT PRIMARY KEY,
  ref TEXT NOT NULL,
  batch_id TEXT,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  operation TEXT,
  body_json TEXT NOT NULL,
  facts_json TEXT NOT NULL,
  warnings_json TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  provider_job_id TEXT,
  handles_json TEXT,
  provider_status TEXT,
  estimate_micro_usd INTEGER,
  estimate_source TEXT NOT NULL,
  charge_micro_usd INTEGER,
  charge_source TEXT,
  charge_state TEXT NOT NULL DEFAULT 'none',
  error_code TEXT,
  error_message TEXT,
  error_detail_json TEXT,
  out_dir TEXT NOT NULL,
  lease_owner TEXT,
  lease_expires_at INTEGER,
  next_attempt_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  submitted_at INTEGER,
  provider_done_at INTEGER,
  finished_at INTEGER,
  tracking_deadline_at INTEGER,
  slots_held_json TEXT NOT NULL DEFAULT '[]',
  last_pending_elapsed_ms INTEGER,
  poll_failures INTEGER NOT NULL DEFAULT 0,
  submit_sent_at INTEGER,
  budget_id TEXT,
  budget_held_micro_usd INTEGER NOT NULL DEFAULT 0,
  blocked_code TEXT,
  route_json TEXT,
  token_id TEXT,
  notify_url TEXT,
  tenant TEXT NOT NULL DEFAULT 'local'
);
INSERT INTO jobs_by_tenant (${COLUMNS}, tenant) SELECT ${COLUMNS}, coalesce(token_id, 'local') FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_by_tenant RENAME TO jobs;
CREATE UNIQUE INDEX jobs_tenant_ref ON jobs (tenant, ref);
CREATE INDEX jobs_ref ON jobs (ref);
CREATE INDEX jobs_tenant_created ON jobs (tenant, created_at, id);
CREATE INDEX jobs_provider_model_done ON jobs (provider, model, provider_done_at);
CREATE INDEX jobs_provider_job ON jobs (provider, provider_job_id);
CREATE INDEX jobs_batch_queue ON jobs (batch_id, state, provider, next_attempt_at, id);
CREATE INDEX jobs_queue ON jobs (state, provider, next_attempt_at, id);
CREATE INDEX jobs_owner_due ON jobs (lease_owner, state, next_attempt_at);
CREATE INDEX jobs_settling ON jobs (charge_state, next_attempt_at);
CREATE INDEX jobs_batch_updated ON jobs (batch_id, updated_at);
CREATE INDEX jobs_created ON jobs (created_at, id);
CREATE INDEX jobs_routed_queue ON jobs (state, provider, next_attempt_at, id) WHERE route_json IS NOT NULL
`;

const postgres = `
ALTER TABLE jobs ADD COLUMN tenant TEXT NOT NULL DEFAULT 'local';
UPDATE jobs SET tenant = token_id WHERE token_id IS NOT NULL;
ALTER TABLE jobs DROP CONSTRAINT jobs_ref_key;
CREATE UNIQUE INDEX jobs_tenant_ref ON jobs (tenant, ref COLLATE "C");
CREATE INDEX jobs_tenant_created ON jobs (tenant, created_at, id);
DROP INDEX jobs_token_ref;
DROP INDEX jobs_token_created
`;

export const migration017 = {
  version: 17,
  name: "tenants",
  sqlite,
  postgres,
  sqliteForeignKeysOff: true,
};
