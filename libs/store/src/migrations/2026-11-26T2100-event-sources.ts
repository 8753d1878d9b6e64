import { sql, type Kysely } from 'kysely';

/**
 * Provenance (docs/protocol.md, "Sources"): every event stores who wrote it (`source`), set by
 * the server from the authenticated principal. Rows stored before have none and are read as the
 * worker's. The append functions take each event's `source` from its JSON and return it with a
 * known row; `svc_decide` returns the sources of the request and the decision it found or stored.
 * Otherwise the functions are as their last migrations made them (2026-11-22T0530-event-store,
 * 2026-11-22T2000-append-many-set-based, 2026-11-24T2330-rules-from-decisions), plans included.
 */
const APPEND_EVENTS = `
CREATE FUNCTION svc_append_events(p_worker_id text, p_events jsonb)
RETURNS TABLE (id bigint, uid text, type text, ts timestamptz, data jsonb, known boolean, source text)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_last_id bigint;
BEGIN
  INSERT INTO event_streams AS s (worker_id) VALUES (p_worker_id)
  ON CONFLICT (worker_id) DO UPDATE SET last_id = s.last_id
  RETURNING s.last_id INTO v_last_id;

  RETURN QUERY
  WITH incoming AS (
    SELECT i.uid, i.type, i.ts, i.data, i.source, i.ord
    FROM ROWS FROM (jsonb_to_recordset(p_events) AS (uid text, type text, ts timestamptz, data jsonb, source text))
      WITH ORDINALITY AS i(uid, type, ts, data, source, ord)
  ),
  known AS (
    SELECT k.id, k.uid, k.type, k.ts, k.data, k.source
    FROM (SELECT DISTINCT n.uid FROM incoming n) u
    CROSS JOIN LATERAL (
      SELECT e.id, e.uid, e.type, e.ts, e.data, e.source FROM events e WHERE e.worker_id = p_worker_id AND e.uid = u.uid LIMIT 1
    ) k
  ),
  fresh AS (
    SELECT DISTINCT ON (n.uid) n.uid, n.type, n.ts, n.data, n.source, n.ord
    FROM incoming n
    WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.uid = n.uid)
    ORDER BY n.uid, n.ord
  ),
  inserted AS (
    INSERT INTO events (worker_id, id, uid, type, ts, data, source)
    SELECT p_worker_id, v_last_id + row_number() OVER (ORDER BY f.ord), f.uid, f.type, f.ts, f.data, f.source
    FROM fresh f
    RETURNING events.id, events.uid
  ),
  bumped AS (
    UPDATE event_streams s SET last_id = (SELECT max(ins.id) FROM inserted ins)
    WHERE s.worker_id = p_worker_id AND EXISTS (SELECT 1 FROM inserted)
  )
  SELECT ins.id, ins.uid, NULL::text, NULL::timestamptz, NULL::jsonb, false, NULL::text FROM inserted ins
  UNION ALL
  SELECT k.id, k.uid, k.type, k.ts, k.data, true, k.source FROM known k;
END;
$fn$;
`;

const APPEND_MANY = `
CREATE FUNCTION svc_append_many(p_batches jsonb)
RETURNS TABLE (worker_id text, id bigint, uid text, type text, ts timestamptz, data jsonb, known boolean, source text)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_workers bigint;
BEGIN
  WITH heads AS (
    INSERT INTO event_streams AS s (worker_id)
    SELECT DISTINCT x.worker_id FROM jsonb_to_recordset(p_batches) AS x(worker_id text) ORDER BY 1
    ON CONFLICT ON CONSTRAINT event_streams_pkey DO UPDATE SET last_id = s.last_id
    RETURNING s.worker_id
  )
  SELECT count(*) INTO v_workers FROM heads;

  RETURN QUERY
  WITH incoming AS (
    SELECT b.worker_id, i.uid, i.type, i.ts, i.data, i.source, i.ord
    FROM jsonb_to_recordset(p_batches) AS b(worker_id text, events jsonb)
    CROSS JOIN LATERAL ROWS FROM (jsonb_to_recordset(b.events) AS (uid text, type text, ts timestamptz, data jsonb, source text))
      WITH ORDINALITY AS i(uid, type, ts, data, source, ord)
  ),
  known AS (
    SELECT k.worker_id, k.id, k.uid, k.type, k.ts, k.data, k.source
    FROM (SELECT DISTINCT n.worker_id, n.uid FROM incoming n) u
    CROSS JOIN LATERAL (
      SELECT e.worker_id, e.id, e.uid, e.type, e.ts, e.data, e.source FROM events e WHERE e.worker_id = u.worker_id AND e.uid = u.uid LIMIT 1
    ) k
  ),
  fresh AS (
    SELECT DISTINCT ON (n.worker_id, n.uid) n.worker_id, n.uid, n.type, n.ts, n.data, n.source, n.ord
    FROM incoming n
    WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.worker_id = n.worker_id AND k.uid = n.uid)
    ORDER BY n.worker_id, n.uid, n.ord
  ),
  inserted AS (
    INSERT INTO events (worker_id, id, uid, type, ts, data, source)
    SELECT f.worker_id, s.last_id + row_number() OVER (PARTITION BY f.worker_id ORDER BY f.ord), f.uid, f.type, f.ts, f.data, f.source
    FROM fresh f JOIN event_streams s ON s.worker_id = f.worker_id
    RETURNING events.worker_id, events.id, events.uid
  ),
  bumped AS (
    UPDATE event_streams s SET last_id = h.last_id
    FROM (SELECT ins.worker_id, max(ins.id) AS last_id FROM inserted ins GROUP BY ins.worker_id) h
    WHERE s.worker_id = h.worker_id
  )
  SELECT ins.worker_id, ins.id, ins.uid, NULL::text, NULL::timestamptz, NULL::jsonb, false, NULL::text FROM inserted ins
  UNION ALL
  SELECT k.worker_id, k.id, k.uid, k.type, k.ts, k.data, true, k.source FROM known k;
END;
$fn$;
`;

const DECIDE = `
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

  SELECT r.id, r.uid, r.ts, r.stored_at, r.data, r.source INTO v_request FROM events r
  WHERE r.worker_id = p_worker_id AND r.type = 'control_request' AND r.data->>'request_id' = p_request_id
  ORDER BY r.id LIMIT 1;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::jsonb, NULL::jsonb;
    RETURN;
  END IF;
  v_request_row := jsonb_build_object('id', v_request.id::text, 'uid', v_request.uid, 'ts', v_request.ts, 'stored_at', v_request.stored_at, 'data', v_request.data, 'source', v_request.source);

  IF EXISTS (SELECT 1 FROM events w WHERE w.worker_id = p_worker_id AND w.type = 'system' AND w.data->>'subtype' = 'control_withdrawn' AND (w.data->'details')->>'request_id' = p_request_id) THEN
    RETURN QUERY SELECT 'withdrawn'::text, v_request_row, NULL::jsonb;
    RETURN;
  END IF;

  SELECT jsonb_build_object('id', d.id::text, 'uid', d.uid, 'ts', d.ts, 'data', d.data, 'source', d.source) INTO v_decision FROM events d
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

  SELECT a.id, a.uid, a.type, a.ts, a.data, a.known, a.source INTO v_appended FROM svc_append_events(p_worker_id, jsonb_build_array(p_decision)) AS a;
  IF v_appended.known THEN
    -- Unreachable while the lock above is held; kept so a change there cannot store twice.
    RETURN QUERY SELECT 'decided'::text, v_request_row, jsonb_build_object('id', v_appended.id::text, 'uid', v_appended.uid, 'ts', v_appended.ts, 'data', v_appended.data, 'source', v_appended.source);
    RETURN;
  END IF;
  RETURN QUERY SELECT 'stored'::text, v_request_row, jsonb_build_object('id', v_appended.id::text, 'uid', p_decision->>'uid', 'ts', (p_decision->>'ts')::timestamptz, 'data', p_decision->'data', 'source', p_decision->>'source');
END;
$fn$;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE events ADD COLUMN source text`.execute(db);
  await sql`DROP FUNCTION svc_decide(text, text, double precision, jsonb)`.execute(db);
  await sql`DROP FUNCTION svc_append_many(jsonb)`.execute(db);
  await sql`DROP FUNCTION svc_append_events(text, jsonb)`.execute(db);
  await sql.raw(APPEND_EVENTS).execute(db);
  await sql.raw(APPEND_MANY).execute(db);
  await sql.raw(DECIDE).execute(db);
  await sql`ALTER FUNCTION svc_append_events(text, jsonb) SET plan_cache_mode = force_generic_plan`.execute(db);
  await sql`ALTER FUNCTION svc_append_many(jsonb) SET plan_cache_mode = force_generic_plan`.execute(db);
}
