import { sql, type Kysely } from 'kysely';

/**
 * `svc_append_many(batches)` appends the events of several workers in one round trip and one
 * transaction: `batches` is a JSON array of `{worker_id, events}`, each appended by
 * `svc_append_events` (same locks, ids and uid rules), in worker-id order so that two callers
 * never take the same head-row locks in opposite orders. event-ingest stores a whole partition
 * batch with it: one commit, however many workers the batch holds.
 */
const APPEND_MANY_FUNCTION = `
CREATE FUNCTION svc_append_many(p_batches jsonb)
RETURNS TABLE (worker_id text, id bigint, uid text, type text, ts timestamptz, data jsonb, known boolean)
LANGUAGE plpgsql AS $fn$
DECLARE
  b record;
BEGIN
  FOR b IN
    SELECT x.worker_id AS w, x.events AS e FROM jsonb_to_recordset(p_batches) AS x(worker_id text, events jsonb) ORDER BY x.worker_id
  LOOP
    RETURN QUERY SELECT b.w, a.id, a.uid, a.type, a.ts, a.data, a.known FROM svc_append_events(b.w, b.e) AS a;
  END LOOP;
END;
$fn$;
`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql.raw(APPEND_MANY_FUNCTION).execute(db);
}
