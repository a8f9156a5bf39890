/**
 * Migration 1: jobs, their event log, outputs, slots, rate windows, halts and
 * the ledger. Numbered and append-only: never edit a released migration, add
 * the next number. Each store dialect gets its own readable SQL.
 */
const tables = (types: { id: string; bigint: string; text: string }) => `
CREATE TABLE jobs (
  id TEXT PRIMARY KEY,
  ref TEXT NOT NULL UNIQUE,
  batch_id TEXT,
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  operation TEXT,
  body_json ${types.text} NOT NULL,
  facts_json ${types.text} NOT NULL,
  warnings_json ${types.text} NOT NULL,
  state TEXT NOT NULL,
  reason TEXT,
  attempts INTEGER NOT NULL DEFAULT 0,
  idempotency_key TEXT,
  provider_job_id TEXT,
  handles_json ${types.text},
  provider_status TEXT,
  estimate_micro_usd ${types.bigint},
  estimate_source TEXT NOT NULL,
  charge_micro_usd ${types.bigint},
  charge_source TEXT,
  charge_state TEXT NOT NULL DEFAULT 'none',
  error_code TEXT,
  error_message TEXT,
  error_detail_json ${types.text},
  out_dir TEXT NOT NULL,
  lease_owner TEXT,
  lease_expires_at ${types.bigint},
  next_attempt_at ${types.bigint} NOT NULL,
  created_at ${types.bigint} NOT NULL,
  updated_at ${types.bigint} NOT NULL,
  submitted_at ${types.bigint},
  provider_done_at ${types.bigint},
  finished_at ${types.bigint},
  tracking_deadline_at ${types.bigint},
  slots_held_json ${types.text} NOT NULL DEFAULT '[]',
  last_pending_elapsed_ms ${types.bigint},
  poll_failures INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX jobs_state_due ON jobs (state, next_attempt_at);
CREATE INDEX jobs_batch ON jobs (batch_id);
CREATE INDEX jobs_provider_model_done ON jobs (provider, model, provider_done_at);

CREATE TABLE job_events (
  id ${types.id},
  job_id TEXT NOT NULL REFERENCES jobs (id),
  at ${types.bigint} NOT NULL,
  from_state TEXT,
  to_state TEXT NOT NULL,
  reason TEXT NOT NULL,
  detail_json ${types.text}
);
CREATE INDEX job_events_job ON job_events (job_id, id);

CREATE TABLE outputs (
  job_id TEXT NOT NULL REFERENCES jobs (id),
  idx INTEGER NOT NULL,
  path TEXT NOT NULL,
  url TEXT NOT NULL,
  content_type TEXT NOT NULL,
  bytes ${types.bigint} NOT NULL,
  sha256 TEXT NOT NULL,
  metadata_json ${types.text} NOT NULL,
  saved_at ${types.bigint} NOT NULL,
  PRIMARY KEY (job_id, idx)
);

CREATE TABLE slot_pools (
  pool_key TEXT PRIMARY KEY,
  configured_capacity INTEGER NOT NULL,
  learned_capacity INTEGER NOT NULL,
  blocked_until ${types.bigint} NOT NULL DEFAULT 0,
  updated_at ${types.bigint} NOT NULL
);

CREATE TABLE slot_holds (
  pool_key TEXT NOT NULL,
  job_id TEXT NOT NULL REFERENCES jobs (id),
  acquired_at ${types.bigint} NOT NULL,
  PRIMARY KEY (pool_key, job_id)
);

CREATE TABLE rate_events (
  id ${types.id},
  window_key TEXT NOT NULL,
  at ${types.bigint} NOT NULL
);
CREATE INDEX rate_events_window ON rate_events (window_key, at);

CREATE TABLE provider_halts (
  provider TEXT PRIMARY KEY,
  code TEXT NOT NULL,
  message TEXT NOT NULL,
  job_id TEXT,
  at ${types.bigint} NOT NULL
);

CREATE TABLE ledger (
  id ${types.id},
  job_id TEXT NOT NULL UNIQUE REFERENCES jobs (id),
  provider TEXT NOT NULL,
  model TEXT NOT NULL,
  micro_usd ${types.bigint} NOT NULL,
  source TEXT NOT NULL,
  at ${types.bigint} NOT NULL
);
`;

export const migration001 = {
  version: 1,
  name: "init",
  sqlite: tables({ id: "INTEGER PRIMARY KEY AUTOINCREMENT", bigint: "INTEGER", text: "TEXT" }),
  postgres: tables({ id: "BIGSERIAL PRIMARY KEY", bigint: "BIGINT", text: "TEXT" }),
};
