/**
 * bench/store-append: stored events per second of `EventStore.append` for batch sizes 1, 10
 * and 100, on Postgres and on embedded PGlite, beside a raw multi-row INSERT into the same
 * `events` table in the same run (the baseline: no lock, no duplicate check, no transaction).
 *
 *   npm run build && node bench/dist/store-append.js [--seconds 3] [--rounds 3]
 *
 * Rounds alternate append and raw so machine noise hits both alike; the median round counts.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { IncomingEvent } from '@svc/protocol';
import { createEventStore, createPGlite, migrateToLatest, openDatabase, type Database, type Kysely } from '@svc/store';
import { startPostgres } from '@svc/test-support';
import { median, rawInsertSql, rawParameters } from './raw-insert.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '3' }, rounds: { type: 'string', default: '3' } } });
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const BATCH_SIZES = [1, 10, 100];

const TEXT = 'The tests pass now. I changed the parser to keep the raw line when a field is missing, and added a case for it. '.repeat(2);

function makeEvents(prefix: string, start: number, count: number): IncomingEvent[] {
  const ts = new Date().toISOString();
  return Array.from({ length: count }, (_, i) => ({ type: 'assistant', uid: `${prefix}:${start + i}`, ts, data: { text: TEXT, message_id: 'msg_bench' } }));
}

/** Runs `step` (which stores `batch` events) for SECONDS and returns events per second. */
async function measure(batch: number, step: (n: number) => Promise<void>): Promise<number> {
  const deadline = performance.now() + SECONDS * 1000;
  const started = performance.now();
  let stored = 0;
  while (performance.now() < deadline) {
    await step(stored);
    stored += batch;
  }
  return stored / ((performance.now() - started) / 1000);
}

type RawInsert = (workerId: string, firstId: number, events: IncomingEvent[]) => Promise<void>;

async function runBackend(name: string, db: Kysely<Database>, rawInsert: RawInsert) {
  const store = createEventStore(db);
  const rows: Array<Record<string, string>> = [];
  for (const batch of BATCH_SIZES) {
    const appendRates: number[] = [];
    const rawRates: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const appendWorker = `bench-append-${batch}-${round}`;
      appendRates.push(await measure(batch, (n) => store.append(appendWorker, makeEvents(appendWorker, n, batch)).then(() => undefined)));
      const rawWorker = `bench-raw-${batch}-${round}`;
      rawRates.push(await measure(batch, (n) => rawInsert(rawWorker, n + 1, makeEvents(rawWorker, n, batch))));
    }
    const append = median(appendRates);
    const raw = median(rawRates);
    rows.push({ backend: name, batch: String(batch), 'append ev/s': append.toFixed(0), 'raw INSERT ev/s': raw.toFixed(0), ratio: (append / raw).toFixed(2) });
  }
  return rows;
}

async function main() {
  const results: Array<Record<string, string>> = [];

  const postgres = await startPostgres({ durable: true });
  try {
    const database = await openDatabase({ url: postgres.url });
    await migrateToLatest(database.db, 'event-ingest');
    const client = new pg.Client({ connectionString: postgres.url });
    await client.connect();
    results.push(
      ...(await runBackend('postgres', database.db, async (workerId, firstId, events) => {
        await client.query(rawInsertSql(events.length), rawParameters(workerId, firstId, events));
      })),
    );
    await client.end();
    await database.close();
  } finally {
    await postgres.stop();
  }

  const pglite = createPGlite();
  const embedded = await openDatabase({ pglite });
  await migrateToLatest(embedded.db, 'event-ingest');
  results.push(
    ...(await runBackend('pglite', embedded.db, async (workerId, firstId, events) => {
      await pglite.query(rawInsertSql(events.length), rawParameters(workerId, firstId, events));
    })),
  );
  await embedded.close();

  process.stdout.write(`store-append: ${SECONDS}s per measurement, median of ${ROUNDS} alternating rounds, one sequential writer, Postgres with fsync on\n`);
  console.table(results);
}

await main();
