/**
 * Migration 8: a common request's route (issue 11). The targets not tried yet,
 * each with the exact body it would be sent, and the targets tried before,
 * with why each was left: a job that fails before its provider accepts it (no
 * credits, a halt, an outage) moves to the next target with what was
 * validated and estimated before anything was sent. Null for native jobs.
 * The index finds the routed jobs waiting for a provider that was just halted.
 */
const statements = () => `
ALTER TABLE jobs ADD COLUMN route_json TEXT;
CREATE INDEX jobs_routed_queue ON jobs (provider, next_attempt_at, id) WHERE state = 'queued' AND route_json IS NOT NULL
`;

export const migration008 = {
  version: 8,
  name: "job_route",
  sqlite: statements(),
  postgres: statements(),
};
