import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_streams')
    .addColumn('worker_id', 'text', (column) => column.primaryKey())
    .addColumn('last_id', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('worker_id', 'text', (column) => column.notNull())
    .addColumn('id', 'bigint', (column) => column.notNull())
    .addColumn('uid', 'text', (column) => column.notNull())
    .addColumn('type', 'text', (column) => column.notNull())
    .addColumn('ts', 'timestamptz', (column) => column.notNull())
    .addColumn('stored_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .addColumn('data', 'jsonb', (column) => column.notNull())
    .addPrimaryKeyConstraint('events_pkey', ['worker_id', 'id'])
    .addUniqueConstraint('events_worker_uid_key', ['worker_id', 'uid'])
    .execute();

  // Type-filtered reads (the event list's `types`, open control requests) stay index scans.
  await db.schema.createIndex('events_worker_type_id_idx').on('events').columns(['worker_id', 'type', 'id']).execute();

  await sql.raw(APPEND_FUNCTION).execute(db);
}

/**
 * `svc_append_events(worker, events)` appends a batch in one round trip; `events` is a JSON array
 * of `{uid, type, ts, data}` (one parameter: cheaper to send and parse than five arrays).
 * It locks the worker's `event_streams` row first (concurrent appenders of one worker queue
 * there, so ids are handed out and committed in order, without holes); each later statement
 * of the function takes a fresh snapshot, so it sees every event committed before the lock
 * was granted. Uids already stored are not stored again, nor is a uid's second occurrence in
 * the batch. It returns the rows it stored (`known = false`) and the stored rows of the uids it
 * skipped (`known = true`); the caller puts them back in its batch's order.
 */
const APPEND_FUNCTION = `
CREATE FUNCTION svc_append_events(p_worker_id text, p_events jsonb)
RETURNS TABLE (id bigint, uid text, type text, ts timestamptz, data jsonb, known boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_last_id bigint;
  v_known text[];
BEGIN
  INSERT INTO event_streams (worker_id) VALUES (p_worker_id) ON CONFLICT (worker_id) DO NOTHING;
  SELECT s.last_id INTO v_last_id FROM event_streams s WHERE s.worker_id = p_worker_id FOR UPDATE;

  -- LATERAL ... LIMIT 1 keeps these lookups on the (worker_id, uid) index whatever the table's
  -- statistics say: a plan cached while the table was small must not scan a worker's events.
  v_known := ARRAY(
    SELECT k.uid FROM jsonb_array_elements(p_events) AS u(event)
    CROSS JOIN LATERAL (SELECT e.uid FROM events e WHERE e.worker_id = p_worker_id AND e.uid = u.event->>'uid' LIMIT 1) k
  );

  RETURN QUERY
  WITH inserted AS (
    INSERT INTO events (worker_id, id, uid, type, ts, data)
    SELECT p_worker_id, v_last_id + row_number() OVER (ORDER BY f.ord), f.uid, f.type, f.ts, f.data
    FROM (
      SELECT DISTINCT ON (i.uid) i.uid, i.type, i.ts, i.data, i.ord
      FROM ROWS FROM (jsonb_to_recordset(p_events) AS (uid text, type text, ts timestamptz, data jsonb))
        WITH ORDINALITY AS i(uid, type, ts, data, ord)
      WHERE i.uid <> ALL (v_known)
      ORDER BY i.uid, i.ord
    ) f
    RETURNING events.id, events.uid, events.type, events.ts, events.data
  ),
  bumped AS (
    UPDATE event_streams s SET last_id = (SELECT max(ins.id) FROM inserted ins)
    WHERE s.worker_id = p_worker_id AND EXISTS (SELECT 1 FROM inserted)
  )
  SELECT ins.id, ins.uid, ins.type, ins.ts, ins.data, false FROM inserted ins
  UNION ALL
  SELECT e.id, e.uid, e.type, e.ts, e.data, true
  FROM unnest(v_known) AS k(uid)
  CROSS JOIN LATERAL (
    SELECT ev.id, ev.uid, ev.type, ev.ts, ev.data FROM events ev WHERE ev.worker_id = p_worker_id AND ev.uid = k.uid LIMIT 1
  ) e;
END;
$fn$;
`;
