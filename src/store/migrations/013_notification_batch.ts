/**
 * Migration 13: a notification knows its job's batch. A command's engine
 * (`mediagate batch`) delivers the notifications its own jobs owe while it
 * runs; it finds them, and the next one due, through this partial index
 * (only those still owed, by batch in due order), never by walking the
 * batch's jobs or the other batches' owed notifications. `generate` reads
 * its one job's by `notifications_job`.
 */
const statements = `
ALTER TABLE notifications ADD COLUMN batch_id TEXT;
UPDATE notifications SET batch_id = (SELECT batch_id FROM jobs WHERE jobs.id = notifications.job_id);
CREATE INDEX notifications_batch_due ON notifications (batch_id, next_attempt_at) WHERE delivered_at IS NULL AND given_up_at IS NULL
`;

export const migration013 = {
  version: 13,
  name: "notification_batch",
  sqlite: statements,
  postgres: statements,
};
