import { sql, type Kysely } from 'kysely';

/**
 * `svc_append_many(batches)` appends every worker of the call with two statements instead of two
 * per worker. The loop it replaces ran `svc_append_events` once per worker, and each run cost
 * PostgreSQL the same however few events it stored, so many workers with one event each took
 * several times as long as one worker with as many events (`EventStore.appendMany` on the
 * bench's Postgres: docs/benchmarks.md#ingest). Many agents each reporting an event now and then
 * is how a busy deployment looks, so that was most of the store's CPU under bench/ingest's
 * figure 3 load (many workers, an event each).
 *
 * The rules are those of `svc_append_events`:
 * - the first statement takes the head row (`event_streams`) of every worker of the call, in
 *   worker-id order, so two callers never wait for each other's locks in opposite orders;
 * - the second starts once every lock is granted, so its snapshot holds every event committed
 *   before; it skips uids already stored (and a uid's second occurrence), inserts the rest with
 *   each worker's next ids in the order given, and moves each head;
 * - it returns the id and uid of each row it stored (`known = false`) and the whole stored row
 *   of each uid it skipped (`known = true`).
 * Each worker appears at most once in `batches` (`EventStore.appendMany` checks).
 */
const SET_BASED_APPEND_MANY = `
CREATE OR REPLACE FUNCTION svc_append_many(p_batches jsonb)
RETURNS TABLE (worker_id text, id bigint, uid text, type text, ts timestamptz, data jsonb, known boolean)
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
    SELECT b.worker_id, i.uid, i.type, i.ts, i.data, i.ord
    FROM jsonb_to_recordset(p_batches) AS b(worker_id text, events jsonb)
    CROSS JOIN LATERAL ROWS FROM (jsonb_to_recordset(b.events) AS (uid text, type text, ts timestamptz, data jsonb))
      WITH ORDINALITY AS i(uid, type, ts, data, ord)
  ),
  -- LATERAL ... LIMIT 1 keeps each lookup on the (worker_id, uid) index, as in svc_append_events.
  known AS (
    SELECT k.worker_id, k.id, k.uid, k.type, k.ts, k.data
    FROM (SELECT DISTINCT n.worker_id, n.uid FROM incoming n) u
    CROSS JOIN LATERAL (
      SELECT e.worker_id, e.id, e.uid, e.type, e.ts, e.data FROM events e WHERE e.worker_id = u.worker_id AND e.uid = u.uid LIMIT 1
    ) k
  ),
  fresh AS (
    SELECT DISTINCT ON (n.worker_id, n.uid) n.worker_id, n.uid, n.type, n.ts, n.data, n.ord
    FROM incoming n
    WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.worker_id = n.worker_id AND k.uid = n.uid)
    ORDER BY n.worker_id, n.uid, n.ord
  ),
  inserted AS (
    INSERT INTO events (worker_id, id, uid, type, ts, data)
    SELECT f.worker_id, s.last_id + row_number() OVER (PARTITION BY f.worker_id ORDER BY f.ord), f.uid, f.type, f.ts, f.data
    FROM fresh f JOIN event_streams s ON s.worker_id = f.worker_id
    RETURNING events.worker_id, events.id, events.uid
  ),
  bumped AS (
    UPDATE event_streams s SET last_id = h.last_id
    FROM (SELECT ins.worker_id, max(ins.id) AS last_id FROM inserted ins GROUP BY ins.worker_id) h
    WHERE s.worker_id = h.worker_id
  )
  SELECT ins.worker_id, ins.id, ins.uid, NULL::text, NULL::timestamptz, NULL::jsonb, false FROM inserted ins
  UNION ALL
  SELECT k.worker_id, k.id, k.uid, k.type, k.ts, k.data, true FROM known k;
END;
$fn$;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(SET_BASED_APPEND_MANY).execute(db);
  // Generic plans, for the reason svc_append_events has them (2026-11-22T1700-append-generic-plans).
  await sql`ALTER FUNCTION svc_append_many(jsonb) SET plan_cache_mode = force_generic_plan`.execute(db);
}
