/**
 * Migration 3: a rate event also records when the request's answer came
 * back. The provider counts a request when it arrives, which is somewhere
 * between our send time (`at`) and the answer; a request still in flight
 * counts against its window until it is answered, and an answered one leaves
 * the window a full window after its answer, which is never too early. Rows
 * written before this migration are treated as answered when sent, as before.
 */
const statements = (bigint: string) => `
ALTER TABLE rate_events ADD COLUMN answered_at ${bigint};
UPDATE rate_events SET answered_at = at
`;

export const migration003 = {
  version: 3,
  name: "rate_answered_at",
  sqlite: statements("INTEGER"),
  postgres: statements("BIGINT"),
};
