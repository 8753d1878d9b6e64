import { sql, type Kysely } from 'kysely';

/**
 * The event log stops writing a table of the control service's. A worker's permission rules
 * (`GET …/permission-rules`) are the decisions a person stored with `scope: "always"`, read from
 * the log (`ControlRequestLog.permissionRules`); the copy in `permission_rules`, which
 * `svc_decide` wrote in the same transaction, goes. Nothing is lost: every row there was written
 * with such a decision, which stays.
 * - `events_always_decisions_idx` keeps that read an index lookup however long a worker runs;
 * - `svc_decide` takes no rule any more (it is otherwise as 2026-11-22T1500-decide made it).
 */
const DECIDE_FUNCTION = `
CREATE FUNCTION svc_decide(p_worker_id text, p_request_id text, p_timeout_s double precision, p_decision jsonb)
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
  RETURN QUERY SELECT 'stored'::text, v_request_row, jsonb_build_object('id', v_appended.id::text, 'uid', p_decision->>'uid', 'ts', (p_decision->>'ts')::timestamptz, 'data', p_decision->'data');
END;
$fn$;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX events_always_decisions_idx ON events (worker_id, id) WHERE type = 'control_response' AND data->>'scope' = 'always'`.execute(db);
  await sql`DROP FUNCTION svc_decide(text, text, double precision, jsonb, jsonb)`.execute(db);
  await sql.raw(DECIDE_FUNCTION).execute(db);
  await sql`DROP TABLE permission_rules`.execute(db);
}
