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
 *
 * Its first statement takes the worker's `event_streams` row lock (creating the row if needed):
 * concurrent appenders of one worker queue there, so ids are handed out, and committed, in
 * order and without holes. The second statement starts after the lock is granted, so its
 * snapshot holds every event committed before; it skips uids already stored (and a uid's second
 * occurrence in the batch), inserts the rest with the next ids and moves the head.
 * It returns the id and uid of each row it stored (`known = false`; the caller has the rest)
 * and the whole stored row of each uid it skipped (`known = true`).
 */
const APPEND_FUNCTION = `
CREATE FUNCTION svc_append_events(p_worker_id text, p_events jsonb)
RETURNS TABLE (id bigint, uid text, type text, ts timestamptz, data jsonb, known boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_last_id bigint;
BEGIN
  INSERT INTO event_streams AS s (worker_id) VALUES (p_worker_id)
  ON CONFLICT (worker_id) DO UPDATE SET last_id = s.last_id
  RETURNING s.last_id INTO v_last_id;

  RETURN QUERY
  WITH incoming AS (
    SELECT i.uid, i.type, i.ts, i.data, i.ord
    FROM ROWS FROM (jsonb_to_recordset(p_events) AS (uid text, type text, ts timestamptz, data jsonb))
      WITH ORDINALITY AS i(uid, type, ts, data, ord)
  ),
  -- LATERAL ... LIMIT 1 keeps each lookup on the (worker_id, uid) index whatever the table's
  -- statistics say: a plan cached while the table was small must not scan a worker's events.
  known AS (
    SELECT k.id, k.uid, k.type, k.ts, k.data
    FROM (SELECT DISTINCT n.uid FROM incoming n) u
    CROSS JOIN LATERAL (
      SELECT e.id, e.uid, e.type, e.ts, e.data FROM events e WHERE e.worker_id = p_worker_id AND e.uid = u.uid LIMIT 1
    ) k
  ),
  fresh AS (
    SELECT DISTINCT ON (n.uid) n.uid, n.type, n.ts, n.data, n.ord
    FROM incoming n
    WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.uid = n.uid)
    ORDER BY n.uid, n.ord
  ),
  inserted AS (
    INSERT INTO events (worker_id, id, uid, type, ts, data)
    SELECT p_worker_id, v_last_id + row_number() OVER (ORDER BY f.ord), f.uid, f.type, f.ts, f.data
    FROM fresh f
    RETURNING events.id, events.uid
  ),
  bumped AS (
    UPDATE event_streams s SET last_id = (SELECT max(ins.id) FROM inserted ins)
    WHERE s.worker_id = p_worker_id AND EXISTS (SELECT 1 FROM inserted)
  )
  SELECT ins.id, ins.uid, NULL::text, NULL::timestamptz, NULL::jsonb, false FROM inserted ins
  UNION ALL
  SELECT k.id, k.uid, k.type, k.ts, k.data, true FROM known k;
END;
$fn$;
`;
