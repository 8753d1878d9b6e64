import { sql, type Kysely } from 'kysely';

/**
 * `svc_append_events` plans its statements generically (`plan_cache_mode = force_generic_plan`).
 *
 * By default PostgreSQL plans a function's statements for the call's own values (a custom plan)
 * and keeps doing so while that looks cheaper. When ANALYZE last sampled `events` while one
 * worker had nearly all its rows (the first busy worker of a deployment), every other worker
 * looks like it has a single row; a custom plan then checks each incoming uid by walking the
 * worker's rows instead of probing the `(worker_id, uid)` index, and an append to a worker with
 * a few thousand events became many times slower (docs/benchmarks.md#ingest: figure 2 after
 * figure 1). A generic plan assumes an average worker, for which the unique index is the only
 * sensible lookup, whatever the statistics say about a particular worker.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER FUNCTION svc_append_events(text, jsonb) SET plan_cache_mode = force_generic_plan`.execute(db);
}
