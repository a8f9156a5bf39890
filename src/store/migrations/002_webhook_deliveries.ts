/**
 * Migration 2: every webhook delivery received, verified or not. Accepted
 * deliveries are unique per provider and delivery id (B's `webhook-id`, F's
 * generation id), which is what makes a repeated delivery a no-op; rejected
 * ones have no delivery id, so a forged id cannot block the genuine delivery.
 * Jobs get an index on the provider's job id, which deliveries are matched by.
 */
const tables = (types: { id: string; bigint: string }) => `
CREATE TABLE webhook_deliveries (
  id ${types.id},
  provider TEXT NOT NULL,
  delivery_id TEXT,
  job_id TEXT,
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL,
  received_at ${types.bigint} NOT NULL
);
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (provider, delivery_id);
CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id);
CREATE INDEX jobs_provider_job ON jobs (provider, provider_job_id)
`;

export const migration002 = {
  version: 2,
  name: "webhook_deliveries",
  sqlite: tables({ id: "INTEGER PRIMARY KEY AUTOINCREMENT", bigint: "INTEGER" }),
  postgres: tables({ id: "BIGSERIAL PRIMARY KEY", bigint: "BIGINT" }),
};
