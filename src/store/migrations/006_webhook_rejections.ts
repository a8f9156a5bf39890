/**
 * Migration 6: refused webhook deliveries are counted, not stored one by
 * one. Anyone can post to `/webhooks/…`, so a row per refusal let a forger
 * grow the store without bound; a counter per (provider, reason, time
 * bucket) grows with time only. `provider` is one of ours or `unknown`, and
 * `reason` a stable code from a fixed set, so no request can add a key.
 * `throttled` is how many of `refused` were answered 429 because their
 * source had passed its bound. Accepted and unmatched deliveries keep their
 * rows in `webhook_deliveries`; rejected rows written there before this
 * migration are left as they were.
 */
const statements = (bigint: string) => `
CREATE TABLE webhook_rejections (
  provider TEXT NOT NULL,
  reason TEXT NOT NULL,
  bucket_start ${bigint} NOT NULL,
  refused ${bigint} NOT NULL,
  throttled ${bigint} NOT NULL,
  first_at ${bigint} NOT NULL,
  last_at ${bigint} NOT NULL,
  PRIMARY KEY (provider, reason, bucket_start)
);
CREATE INDEX webhook_rejections_bucket ON webhook_rejections (bucket_start)
`;

export const migration006 = {
  version: 6,
  name: "webhook_rejections",
  sqlite: statements("INTEGER"),
  postgres: statements("BIGINT"),
};
