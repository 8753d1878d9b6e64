import { sql, type Kysely } from 'kysely';

/**
 * `svc_decide(worker, request_id, timeout_s, decision, rule)` checks a person's decision and
 * stores it in one round trip (a decision's latency is mostly round trips:
 * docs/benchmarks.md#control-rtt). It first takes the worker's head-row lock, so what it reads
 * next includes every event committed before, and no event of the worker is stored until it
 * commits. Then, in the order the API reports them:
 * - no `control_request` with that id → `not_found`;
 * - withdrawn by the agent → `withdrawn`;
 * - already decided (any `control_response` on it: a person's, the deadline's, the sidecar's
 *   policy) → `decided`, with the first decision;
 * - stored `timeout_s` or more ago → `expired` (the caller stores the deadline's decision);
 * - else the decision is appended by `svc_append_events` (same ids and uid rule) → `stored`,
 *   and with `rule` (a `scope: "always"` decision) the permission rule is added in the same
 *   transaction, with the request's tool name.
 * Every outcome returns the request; `decided` and `stored` also the decision.
 */
const DECIDE_FUNCTION = `
CREATE FUNCTION svc_decide(p_worker_id text, p_request_id text, p_timeout_s double precision, p_decision jsonb, p_rule jsonb)
RETURNS TABLE (outcome text, request_row jsonb, decision_row jsonb)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_request record;
  v_decision jsonb;
  v_appended record;
  v_request_row jsonb;
BEGIN
  PERFORM 1 FROM event_streams s WHERE s.worker_id = p_worker_id FOR UPDATE;

  SELECT r.id, r.uid, r.ts, r.stored_at, r.data INTO v_request FROM events r
  WHERE r.worker_id = p_worker_id AND r.type = 'control_request' AND r.data->>'request_id' = p_request_id
  ORDER BY r.id LIMIT 1;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  v_request_row := jsonb_build_object('id', v_request.id::text, 'uid', v_request.uid, 'ts', v_request.ts, 'stored_at', v_request.stored_at, 'data', v_request.data);

  IF EXISTS (SELECT 1 FROM events w WHERE w.worker_id = p_worker_id AND w.type = 'system' AND w.data->>'subtype' = 'control_withdrawn' AND (w.data->'details')->>'request_id' = p_request_id) THEN
    RETURN QUERY SELECT 'withdrawn'::text, v_request_row, NULL::jsonb;
    RETURN;
  END IF;

  SELECT jsonb_build_object('id', d.id::text, 'uid', d.uid, 'ts', d.ts, 'data', d.data) INTO v_decision FROM events d
  WHERE d.worker_id = p_worker_id AND d.type = 'control_response' AND d.data->>'request_id' = p_request_id
  ORDER BY d.id LIMIT 1;
  IF v_decision IS NOT NULL THEN
    RETURN QUERY SELECT 'decided'::text, v_request_row, v_decision;
    RETURN;
  END IF;

  IF clock_timestamp() >= v_request.stored_at + make_interval(secs => p_timeout_s) THEN
    RETURN QUERY SELECT 'expired'::text, v_request_row, NULL::jsonb;
    RETURN;
  END IF;

  SELECT a.id, a.uid, a.type, a.ts, a.data, a.known INTO v_appended FROM svc_append_events(p_worker_id, jsonb_build_array(p_decision)) AS a;
  IF v_appended.known THEN
    -- Unreachable while the lock above is held; kept so a change there cannot store twice.
    RETURN QUERY SELECT 'decided'::text, v_request_row, jsonb_build_object('id', v_appended.id::text, 'uid', v_appended.uid, 'ts', v_appended.ts, 'data', v_appended.data);
    RETURN;
  END IF;
  IF p_rule IS NOT NULL THEN
    INSERT INTO permission_rules (worker_id, tool_name, input_pattern, decision, added_by, request_id)
    VALUES (p_worker_id, v_request.data->>'tool_name', p_rule->>'input_pattern', p_decision->'data'->>'decision', p_decision->'data'->>'decided_by', p_request_id);
  END IF;
  RETURN QUERY SELECT 'stored'::text, v_request_row, jsonb_build_object('id', v_appended.id::text, 'uid', p_decision->>'uid', 'ts', (p_decision->>'ts')::timestamptz, 'data', p_decision->'data');
END;
$fn$;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(DECIDE_FUNCTION).execute(db);
}
