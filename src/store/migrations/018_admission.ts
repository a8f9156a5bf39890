import { claimFunction } from "./015_claim_function.js";
import { claimOrNextFunction } from "./016_claim_or_next_function.js";

/**
 * Migration 18: admission is atomic, and a request can be retried (issue 35).
 *
 * A job's estimate is reserved in its budget when it is admitted, in the
 * transaction that stores it, not when it is sent: concurrent requests of one
 * token could each see room for themselves and all be told 201, and the
 * engine then left the rest queued for ever. From admission a job holds its
 * estimate (`budget_held_micro_usd`) until it ends; a claim commits only what
 * it sends beyond that (more when a route moved it to a dearer target, less
 * when to a cheaper one) and refuses to send while the budget is over its
 * ceiling (charges above their estimates). A job admitted before this
 * version holds nothing while queued and commits its whole estimate at its
 * claim, as before. PostgreSQL's claim functions (migrations 15 and 16) are
 * replaced with that rule; SQLite's claim (store/claims.ts) makes the same
 * decision, and test/store/claim-function.test.ts compares the two.
 *
 * `idempotency_keys`: the `Idempotency-Key` of a request that was admitted,
 * per tenant, with the sha256 of what was asked and the answer (its status,
 * the jobs, the batch), kept until `expires_at` (at least 24 hours): the same
 * key and request answer the first answer again, another request under the
 * key is refused, and concurrent duplicates make one admission (the key's
 * row is taken first, in the admission's transaction).
 */
function replaceEach(text: string, pairs: ReadonlyArray<[string, string]>, name: string): string {
  let replaced = text;
  for (const [from, to] of pairs) {
    if (!replaced.includes(from)) throw new Error(`migration 18: "${from.slice(0, 60)}" is not in ${name}`);
    replaced = replaced.replaceAll(from, to);
  }
  return replaced;
}

/** The same claim, reading what the job holds and committing the difference: see above. */
const RESERVED: ReadonlyArray<[string, string]> = [
  ["SELECT id, state, attempts, budget_id, estimate_micro_usd", "SELECT id, state, attempts, budget_id, estimate_micro_usd, budget_held_micro_usd"],
  [
    "      IF v_budget.committed_micro_usd + v_held > v_budget.ceiling_micro_usd\n",
    "      IF v_budget.committed_micro_usd + greatest(v_held - v_job.budget_held_micro_usd, 0) > v_budget.ceiling_micro_usd\n",
  ],
  [
    "      IF v_held <> 0 THEN\n        UPDATE budgets SET committed_micro_usd = committed_micro_usd + v_held, updated_at = p_now WHERE id = v_job.budget_id;",
    "      IF v_held <> v_job.budget_held_micro_usd THEN\n        UPDATE budgets SET committed_micro_usd = committed_micro_usd + v_held - v_job.budget_held_micro_usd, updated_at = p_now WHERE id = v_job.budget_id;",
  ],
  ["CREATE FUNCTION ", "CREATE OR REPLACE FUNCTION "],
];

const idempotencyKeys = (bigint: string) => `
CREATE TABLE idempotency_keys (
  tenant TEXT NOT NULL,
  key TEXT NOT NULL,
  request_sha256 TEXT NOT NULL,
  status INTEGER NOT NULL,
  job_ids_json TEXT NOT NULL,
  batch_id TEXT,
  created_at ${bigint} NOT NULL,
  expires_at ${bigint} NOT NULL,
  PRIMARY KEY (tenant, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at)
`;

export const migration018 = {
  version: 18,
  name: "admission",
  sqlite: idempotencyKeys("INTEGER"),
  postgres: [
    ...idempotencyKeys("BIGINT").split(";").map((statement) => statement.trim()),
    replaceEach(claimFunction, RESERVED, "migration 15's function"),
    replaceEach(claimOrNextFunction, RESERVED, "migration 16's function"),
  ],
};
