import { claimFunction } from "./015_claim_function.js";

/**
 * Migration 16 (PostgreSQL only): `mediagate_claim_or_next`, migration 15's
 * claim that, when the job asked for was taken first, claims the queue's next
 * free job of the same model in its place, in the same call.
 *
 * With several engines on one store, each reads the head of the same queue,
 * and a claim of a job another engine took a moment before is "gone". The
 * store then claimed another job of the queue in its place as its own
 * statements in a transaction: begin, the job's lock, the queue read with
 * `SKIP LOCKED`, the slot pool's lock and count of holds, the update, commit.
 * Measured with four `mediagate worker` processes, 84% of claims went that
 * way and the statements per job doubled (5.7 with one worker, 11.6 with
 * four); and that transaction held the slot pool's row, which every claim of
 * the provider waits for, across three round trips to the engine.
 *
 * Here the job in its place is chosen under the same locks as there (the
 * queue's first due jobs of the provider, in its batch when given, locked
 * `FOR UPDATE SKIP LOCKED`), among those of the asked job's model and
 * operation: a provider's slot pools depend on nothing else of a request
 * (`ProviderAdapter.limits`), so the pools the engine gave for the job asked
 * for are that job's too. The engine still offers jobs of other models
 * through the store's statements when none of the same model is free. The
 * answer says `instead` when the job claimed (or refused a slot or its
 * budget) is not the one asked for. Migration 15's function stays for
 * processes of the version before.
 */
function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`migration 16: "${from.slice(0, 60)}" is not in migration 15's function exactly once`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}

const HEADER = "CREATE FUNCTION mediagate_claim(\n  p_job_id TEXT,";
const PICK = "  SELECT id, state, attempts, budget_id, estimate_micro_usd INTO v_job FROM jobs WHERE id = p_job_id FOR UPDATE SKIP LOCKED;\n  IF NOT FOUND OR v_job.state <> 'queued' THEN";

const newHeader = "CREATE FUNCTION mediagate_claim_or_next(\n  p_next_provider TEXT, p_next_model TEXT, p_next_operation TEXT, p_next_batch_id TEXT, p_next_scan INTEGER,\n  p_job_id TEXT,";
const nextCandidates = (batch: boolean) => [
  "    FOR v_candidate IN",
  "      SELECT id, state, attempts, budget_id, estimate_micro_usd, model, operation FROM jobs",
  `        WHERE state = 'queued' AND provider = p_next_provider AND next_attempt_at <= p_now${batch ? " AND batch_id = p_next_batch_id" : ""}`,
  "        ORDER BY next_attempt_at, id LIMIT p_next_scan FOR UPDATE SKIP LOCKED",
  "    LOOP",
  "      IF v_candidate.model = p_next_model AND v_candidate.operation IS NOT DISTINCT FROM p_next_operation THEN",
  "        v_job := v_candidate;",
  "        v_found := true;",
  "        v_instead := true;",
  "        EXIT;",
  "      END IF;",
  "    END LOOP;",
];
const newPick = [
  "  SELECT id, state, attempts, budget_id, estimate_micro_usd INTO v_job FROM jobs WHERE id = p_job_id FOR UPDATE SKIP LOCKED;",
  "  v_found := FOUND AND v_job.state = 'queued';",
  "  -- Taken first: the first of the queue's next due jobs that no other engine is claiming, of the same model and",
  "  -- operation (so of the same slot pools), in the same batch when one is given.",
  "  IF NOT v_found AND p_next_provider IS NOT NULL THEN",
  "    IF p_next_batch_id IS NULL THEN",
  ...nextCandidates(false).map((line) => `  ${line}`),
  "    ELSE",
  ...nextCandidates(true).map((line) => `  ${line}`),
  "    END IF;",
  "  END IF;",
  "  IF NOT v_found THEN",
].join("\n");

// The job claimed is v_job from here on (the one asked for, or the one in its place); every answer says which.
const body = replaceOnce(replaceOnce(claimFunction, HEADER, "@HEADER@"), PICK, "@PICK@")
  .replace(/\bp_job_id\b/g, "v_job.id")
  .replaceAll("RETURN jsonb_build_object(", "RETURN jsonb_build_object('instead', v_instead) || jsonb_build_object(");
export const claimOrNextFunction = replaceOnce(
  replaceOnce(replaceOnce(body, "@HEADER@", newHeader), "@PICK@", newPick),
  "  v_url TEXT;\nBEGIN\n",
  "  v_url TEXT;\n  v_candidate RECORD;\n  v_found BOOLEAN := false;\n  v_instead BOOLEAN := false;\nBEGIN\n",
);

export const migration016 = {
  version: 16,
  name: "claim_or_next_function",
  sqlite: "",
  // One statement: the function's body holds semicolons.
  postgres: [claimOrNextFunction],
};
