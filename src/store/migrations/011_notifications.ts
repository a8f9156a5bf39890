/**
 * Migration 11: notifications out (issue 12). One row per notification a
 * job owes: written in the same transaction as the job's change that owes
 * it (its terminal move; every state change under
 * MEDIAGATE_NOTIFY_EVENTS=all), so a crash between that change and the
 * delivery loses nothing. `id` is the Standard Webhooks `webhook-id`, the
 * same on every attempt. `body_json` is made at the first attempt and kept,
 * so every retry sends the same bytes. `attempts` counts attempts as they
 * are claimed; a claim pushes `next_attempt_at` past the attempt's end (the
 * lease), so no two engines send the same attempt at once, and an engine
 * that dies mid-attempt leaves it due again then.
 *
 * The partial index holds only the notifications still owed (neither
 * delivered nor given up) in due order: the engine's read of the due ones
 * and its nap's "next due" never walk the delivered past.
 */
const statements = (bigint: string) => `
CREATE TABLE notifications (
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  event_type TEXT NOT NULL,
  url TEXT NOT NULL,
  body_json TEXT,
  attempts INTEGER NOT NULL,
  created_at ${bigint} NOT NULL,
  next_attempt_at ${bigint} NOT NULL,
  last_attempt_at ${bigint},
  last_status INTEGER,
  last_error TEXT,
  delivered_at ${bigint},
  given_up_at ${bigint}
);
CREATE INDEX notifications_due ON notifications (next_attempt_at) WHERE delivered_at IS NULL AND given_up_at IS NULL;
CREATE INDEX notifications_job ON notifications (job_id)
`;

export const migration011 = {
  version: 11,
  name: "notifications",
  sqlite: statements("INTEGER"),
  postgres: statements("BIGINT"),
};
