import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'kysely';
import { CodedError } from '@svc/protocol';
import { startPostgres, systemEvent, waitFor, type PostgresProcess } from '@svc/test-support';
import { openDatabase, pingDatabase, type StoreDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';
import { createEventStore } from './event-store.js';
import { isConnectionLoss, isStoreUnavailable } from './store-errors.js';

/**
 * The store when Postgres goes away — an immediate shutdown cuts every connection, idle or in
 * use, as a crash or a failover does: what was asked fails as `store_unavailable` (the gateway's
 * 503), the process lives on (an in-use client's 'error' event is heard), and once Postgres is
 * back the same pool works again with nothing stored lost.
 */
describe('the store across a Postgres outage (real Postgres, immediate shutdown)', () => {
  let postgres: PostgresProcess;
  let database: StoreDatabase;
  const connectionErrors: Error[] = [];

  beforeAll(async () => {
    postgres = await startPostgres({ durable: true });
    database = await openDatabase({ url: postgres.url, onConnectionError: (err) => connectionErrors.push(err) });
    await migrateToLatest(database.db, 'event-ingest');
  }, 60_000);
  afterAll(async () => {
    await database?.close();
    await postgres?.stop();
  });

  it('a query in flight, an idle connection and every query during the outage fail as store_unavailable; afterwards the pool serves again and what was stored is there', async () => {
    const store = createEventStore(database.db);
    await store.appendMany([{ workerId: 'w-outage', events: [systemEvent('w-outage:0')] }]);
    // A connection in use (a query sleeping inside a transaction) and idle ones in the pool.
    const inFlight = database.db
      .transaction()
      .execute((trx) => sql`select pg_sleep(30)`.execute(trx))
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    await waitFor('the sleeping query running', async () => {
      const { rows } = await sql<{
        running: number;
      }>`select count(*)::int as running from pg_stat_activity where state = 'active' and query like 'select pg_sleep%'`.execute(database.db);
      return rows[0]!.running > 0;
    });
    await postgres.suspend('immediate');

    const failed = await inFlight;
    expect(failed).toBeInstanceOf(CodedError);
    expect(failed).toMatchObject({ code: 'store_unavailable', message: 'the database is unavailable; retry shortly' });
    const during = await store.appendMany([{ workerId: 'w-outage', events: [systemEvent('w-outage:1')] }]).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(isStoreUnavailable(during)).toBe(true);
    expect(await pingDatabase(database.db, 500)).toBe(false);
    // The in-use client's own 'error' event reached our listener instead of ending the process.
    expect(connectionErrors.length).toBeGreaterThan(0);

    await postgres.resume();
    const stored = await store.appendMany([{ workerId: 'w-outage', events: [systemEvent('w-outage:1')] }]);
    expect(stored[0]!.map((r) => r.event.uid)).toEqual(['w-outage:1']);
    expect((await store.list('w-outage', { afterId: '0', limit: 10 })).map((e) => e.uid)).toEqual(['w-outage:0', 'w-outage:1']);
  }, 60_000);

  it('tells a database that is away from a query that is wrong', async () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '08006'])
      expect(isConnectionLoss(Object.assign(new Error('x'), { code })), code).toBe(true);
    expect(isConnectionLoss(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionLoss(new Error('failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) }))).toBe(true);
    expect(isConnectionLoss(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]))).toBe(true);
    for (const code of ['23505', '42P01', '22P02']) expect(isConnectionLoss(Object.assign(new Error('x'), { code })), code).toBe(false);
    await expect(sql`select * from no_such_table`.execute(database.db)).rejects.not.toBeInstanceOf(CodedError);
  });
});
