/**
 * Migration 15 (PostgreSQL only): a job's claim in one round trip.
 *
 * `claimForSubmit` decides, under row locks, whether a queued job may be sent:
 * lock the job, lock each of its slot pools and count the pool's holds, lock
 * its budget and commit its estimate, then move it to `submitting` with its
 * event and its holds. Sent statement by statement that was six round trips
 * (BEGIN, four statements, COMMIT), half the statements of a job's life on
 * PostgreSQL, with the pool's row locked for four of them: claims for one
 * provider were serial at the pace of those round trips.
 *
 * `mediagate_claim` makes the same decision in one statement, in the same
 * order of locks. It is not one SQL statement with a WITH for each step:
 * under READ COMMITTED a statement sees the database as it was when it began,
 * so a count of the holds in the statement that waited for the pool's lock
 * would miss the hold the claim it waited for had just committed, and give
 * out a slot that is taken. In PL/pgSQL each statement takes a new snapshot,
 * so the count that follows the lock sees every hold committed before it.
 *
 * It answers in JSON: `{kind: "gone"}` (the job is not queued, or another
 * engine holds it), `{kind: "no_slot", pool_key, retry_at}`,
 * `{kind: "over_budget", budget}` or `{kind: "claimed", job, filled}`, with
 * the job's and the budget's rows as `to_jsonb` writes them (their columns by
 * name). SQLite runs the store's own statements in process, where a round
 * trip costs nothing; `KyselyStore.claimLocked` stays the decision there, and
 * for PostgreSQL's claim of another job instead of one taken first. The
 * store's claim tests run on both stores, and a test compares the two
 * decisions on PostgreSQL case by case.
 */
export const claimFunction = `
CREATE FUNCTION mediagate_claim(
  p_job_id TEXT, p_owner TEXT, p_pool_keys TEXT[], p_pool_capacities INTEGER[], p_now BIGINT, p_lease_ms BIGINT,
  p_holds_json TEXT, p_reason TEXT, p_notify_type TEXT, p_notify_id TEXT, p_notify_default_url TEXT
) RETURNS JSONB LANGUAGE plpgsql AS $claim$
DECLARE
  v_job RECORD;
  v_pool RECORD;
  v_budget RECORD;
  v_held BIGINT;
  v_count BIGINT;
  v_filled TEXT[] := '{}';
  v_updated jobs%ROWTYPE;
  v_url TEXT;
BEGIN
  SELECT id, state, attempts, budget_id, estimate_micro_usd INTO v_job FROM jobs WHERE id = p_job_id FOR UPDATE SKIP LOCKED;
  IF NOT FOUND OR v_job.state <> 'queued' THEN
    RETURN jsonb_build_object('kind', 'gone');
  END IF;
  FOR i IN 1 .. coalesce(array_length(p_pool_keys, 1), 0) LOOP
    SELECT * INTO v_pool FROM slot_pools WHERE pool_key = p_pool_keys[i] FOR UPDATE;
    IF NOT FOUND THEN
      INSERT INTO slot_pools (pool_key, configured_capacity, learned_capacity, blocked_until, updated_at)
        VALUES (p_pool_keys[i], p_pool_capacities[i], p_pool_capacities[i], 0, p_now)
        ON CONFLICT (pool_key) DO NOTHING;
      SELECT * INTO v_pool FROM slot_pools WHERE pool_key = p_pool_keys[i] FOR UPDATE;
    ELSIF v_pool.configured_capacity <> p_pool_capacities[i] THEN
      -- spec: the published capacity can change (C's tier); learned capacity never exceeds it.
      UPDATE slot_pools SET configured_capacity = p_pool_capacities[i], learned_capacity = least(learned_capacity, p_pool_capacities[i])
        WHERE pool_key = p_pool_keys[i];
      SELECT * INTO v_pool FROM slot_pools WHERE pool_key = p_pool_keys[i] FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'slot pool % could not be created', p_pool_keys[i];
    END IF;
    IF v_pool.blocked_until > p_now THEN
      RETURN jsonb_build_object('kind', 'no_slot', 'pool_key', p_pool_keys[i], 'retry_at', v_pool.blocked_until);
    END IF;
    -- A statement of its own, after the pool's lock: it sees every hold committed before the lock was given.
    SELECT count(*) INTO v_count FROM slot_holds WHERE pool_key = p_pool_keys[i];
    IF v_count >= v_pool.learned_capacity THEN
      RETURN jsonb_build_object('kind', 'no_slot', 'pool_key', p_pool_keys[i], 'retry_at', NULL);
    END IF;
    IF v_count + 1 >= v_pool.learned_capacity THEN
      v_filled := v_filled || p_pool_keys[i];
    END IF;
  END LOOP;
  -- The estimate is committed in the statement that decides to send, so no engine on this store can pass the ceiling.
  v_held := coalesce(v_job.estimate_micro_usd, 0);
  IF v_job.budget_id IS NOT NULL THEN
    SELECT * INTO v_budget FROM budgets WHERE id = v_job.budget_id FOR UPDATE;
    IF FOUND THEN
      -- An unpriced job (run under --allow-unpriced) commits nothing, so it is sent only while the ceiling is not reached.
      IF v_budget.committed_micro_usd + v_held > v_budget.ceiling_micro_usd
        OR (v_job.estimate_micro_usd IS NULL AND v_budget.committed_micro_usd >= v_budget.ceiling_micro_usd) THEN
        RETURN jsonb_build_object('kind', 'over_budget', 'budget', to_jsonb(v_budget));
      END IF;
      IF v_held <> 0 THEN
        UPDATE budgets SET committed_micro_usd = committed_micro_usd + v_held, updated_at = p_now WHERE id = v_job.budget_id;
      END IF;
    END IF;
  END IF;
  INSERT INTO slot_holds (pool_key, job_id, acquired_at) SELECT key, p_job_id, p_now FROM unnest(p_pool_keys) AS key;
  UPDATE jobs SET
    state = 'submitting', reason = NULL, blocked_code = NULL, attempts = v_job.attempts + 1,
    lease_owner = p_owner, lease_expires_at = p_now + p_lease_ms, slots_held_json = p_holds_json,
    budget_held_micro_usd = CASE WHEN v_job.budget_id IS NULL THEN budget_held_micro_usd ELSE v_held END,
    updated_at = p_now
    WHERE id = p_job_id
    RETURNING * INTO v_updated;
  -- The detail as JSON.stringify writes it for the other stores' claims: {"attempt":N,"slots":[...]}.
  INSERT INTO job_events (job_id, at, from_state, to_state, reason, detail_json)
    VALUES (p_job_id, p_now, 'queued', 'submitting', p_reason, '{"attempt":' || (v_job.attempts + 1) || ',"slots":' || p_holds_json || '}');
  v_url := coalesce(v_updated.notify_url, p_notify_default_url);
  IF p_notify_type IS NOT NULL AND v_url IS NOT NULL THEN
    INSERT INTO notifications (id, job_id, batch_id, event_type, url, body_json, attempts, created_at, next_attempt_at)
      VALUES (p_notify_id, p_job_id, v_updated.batch_id, p_notify_type, v_url, NULL, 0, p_now, p_now);
  END IF;
  RETURN jsonb_build_object('kind', 'claimed', 'job', to_jsonb(v_updated), 'filled', to_jsonb(v_filled));
END
$claim$
`;

export const migration015 = {
  version: 15,
  name: "claim_function",
  sqlite: "",
  // One statement: the function's body holds semicolons.
  postgres: [claimFunction],
};
