import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_EVENTS, personMessageData, type IncomingEvent, type StoredEvent } from '@svc/protocol';
import { systemEvent, startPostgres, type PostgresProcess } from '@svc/test-support';
import { Migrator, sql } from 'kysely';
import pg from 'pg';
import { openDatabase, type StoreDatabase } from './database.js';
import { migrateToLatest } from './migrate.js';
import { createEventStore, type EventStore } from './event-store.js';
import { migrationGroups } from './migrations/index.js';

/** How soon a reader that found nothing new reads again: as hot as a follower, to catch an id made visible out of order. */
const READER_POLL_MS = 1;

/**
 * The visibility invariant under load: `appenders` concurrent writers per worker append
 * batches of 1-10 events (re-sending some uids), while `readers` per worker page through with
 * `list(afterId = last id seen)` until they have seen everything. With `together`, each writer
 * appends its batch for every worker in one `appendMany` call, the workers listed in an order of
 * its own (so concurrent calls name the same workers in different orders).
 */
async function checkVisibilityInvariant(
  store: EventStore,
  workers: string[],
  appenders: number,
  readers: number,
  batchesPerAppender: number,
  together = false,
) {
  const expectedUids = new Map<string, string[][]>(); // worker → per-appender uid sequence
  for (const worker of workers)
    expectedUids.set(
      worker,
      Array.from({ length: appenders }, () => [] as string[]),
    );
  const counters = new Map<string, number>();
  /** Appender `appender`'s next batch for `worker`, its uids noted as expected. */
  const nextBatch = (worker: string, appender: number, batch: number) => {
    const sequence = expectedUids.get(worker)![appender]!;
    const size = 1 + ((appender * 7 + batch * 3) % 10);
    const key = `${worker}-a${appender}`;
    const first = counters.get(key) ?? 0;
    counters.set(key, first + size);
    const events = Array.from({ length: size }, (_, i) => systemEvent(`${key}:${first + i}`));
    // Every third batch also re-sends the last uid of the previous one: it must not be stored twice.
    const resend = batch % 3 === 2 && sequence.length > 0 ? [systemEvent(sequence[sequence.length - 1]!)] : [];
    sequence.push(...events.map((e) => e.uid));
    return { events: [...resend, ...events], resent: resend.length };
  };
  const appendAll = together
    ? Array.from({ length: appenders }, async (_, appender) => {
        // Rotated by the writer's index, and reversed for every other writer.
        const rotated = [...workers.slice(appender % workers.length), ...workers.slice(0, appender % workers.length)];
        const listed = appender % 2 === 0 ? rotated : rotated.reverse();
        for (let batch = 0; batch < batchesPerAppender; batch++) {
          const batches = listed.map((worker) => ({ workerId: worker, ...nextBatch(worker, appender, batch) }));
          const results = await store.appendMany(batches);
          results.forEach((list, index) => expect(list.filter((r) => r.duplicate)).toHaveLength(batches[index]!.resent));
        }
      })
    : workers.flatMap((worker) =>
        Array.from({ length: appenders }, async (_, appender) => {
          for (let batch = 0; batch < batchesPerAppender; batch++) {
            const { events, resent } = nextBatch(worker, appender, batch);
            const results = await store.append(worker, events);
            expect(results.filter((r) => r.duplicate)).toHaveLength(resent);
          }
        }),
      );

  let appending = true;
  let aborted = false;
  const readAll = workers.flatMap((worker) =>
    Array.from({ length: readers }, async () => {
      const seen: StoredEvent[] = [];
      let afterId = '0';
      for (;;) {
        const total = expectedUids.get(worker)!.reduce((sum, s) => sum + s.length, 0);
        if (aborted || (!appending && seen.length === total)) return { worker, seen };
        const page = await store.list(worker, { afterId, limit: 50 });
        if (page.length === 0) {
          await new Promise((resolve) => setTimeout(resolve, READER_POLL_MS));
          continue;
        }
        seen.push(...page);
        afterId = page[page.length - 1]!.id;
      }
    }),
  );

  try {
    await Promise.all(appendAll);
  } catch (err) {
    aborted = true;
    await Promise.allSettled(readAll);
    throw err;
  }
  appending = false;
  const readings = await Promise.all(readAll);

  for (const { worker, seen } of readings) {
    const sequences = expectedUids.get(worker)!;
    const total = sequences.reduce((sum, s) => sum + s.length, 0);
    // Exactly once, contiguous ids.
    expect(seen.map((e) => e.id)).toEqual(Array.from({ length: total }, (_, i) => String(i + 1)));
    expect(new Set(seen.map((e) => e.uid)).size).toBe(total);
    // Each appender's order is kept.
    const idOf = new Map(seen.map((e) => [e.uid, Number(e.id)]));
    for (const sequence of sequences) {
      const ids = sequence.map((uid) => idOf.get(uid)!);
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
    }
    expect(await store.lastId(worker)).toBe(String(total));
    expect(await store.count(worker)).toBe(total);
  }
}

const backends = [['postgres'], ['pglite']] as const;

describe.each(backends)('event store on %s', (backend) => {
  let postgres: PostgresProcess | undefined;
  let database: StoreDatabase;
  let store: EventStore;

  beforeAll(async () => {
    if (backend === 'postgres') {
      postgres = await startPostgres();
      database = await openDatabase({ url: postgres.url, poolSize: 20 });
    } else {
      database = await openDatabase({});
    }
    expect(await migrateToLatest(database.db, 'event-ingest')).toEqual([
      '2026-11-22T0530-event-store',
      '2026-11-22T0900-append-many',
      '2026-11-22T1000-control',
      '2026-11-22T1500-decide',
      '2026-11-22T1700-append-generic-plans',
      '2026-11-22T2000-append-many-set-based',
      '2026-11-24T2330-rules-from-decisions',
      '2026-11-26T2100-event-sources',
      '2026-11-27T1800-rule-keys',
    ]);
    store = createEventStore(database.db);
  });

  afterAll(async () => {
    await database?.close();
    await postgres?.stop();
  });

  it('migrations — a second run applies nothing', async () => {
    expect(await migrateToLatest(database.db, 'event-ingest')).toEqual([]);
  });

  it('append — ids are 1, 2, 3 … per worker, across calls', async () => {
    const first = await store.append('w-seq', [systemEvent('u1'), systemEvent('u2')]);
    const second = await store.append('w-seq', [systemEvent('u3')]);
    const other = await store.append('w-seq-other', [systemEvent('u1')]);
    expect([...first, ...second].map((r) => r.event.id)).toEqual(['1', '2', '3']);
    expect(other[0]!.event).toMatchObject({ id: '1', worker_id: 'w-seq-other' });
  });

  it('purge — every event of the worker goes, batch by batch; other workers keep theirs; ids are not handed out again', async () => {
    await store.append(
      'w-purged',
      Array.from({ length: 25 }, (_, i) => systemEvent(`p${i}`)),
    );
    await store.append('w-kept', [systemEvent('k1'), systemEvent('k2')]);
    expect(await store.purge('w-purged', { batchSize: 10 })).toBe(25);
    expect(await store.count('w-purged')).toBe(0);
    expect(await store.count('w-kept')).toBe(2);
    expect(await store.purge('w-purged')).toBe(0);
    expect(await store.purge('w-never-there')).toBe(0);
    const [late] = await store.append('w-purged', [systemEvent('late')]);
    expect(late!.event.id).toBe('26');
  });

  it('append — every event type round-trips through the store unchanged', async () => {
    const events = Object.values(EXAMPLE_EVENTS) as IncomingEvent[];
    const appended = await store.append('w-types', events);
    const listed = await store.list('w-types', { afterId: '0', limit: 100 });
    expect(listed).toEqual(appended.map((r) => r.event));
    expect(listed.map(({ type, uid, ts, data }) => ({ type, uid, ts, data }))).toEqual(events);
  });

  it('append — a NUL or a lone surrogate (which Postgres refuses in jsonb) is stored as U+FFFD, and the batch with it is stored', async () => {
    const results = await store.appendMany([
      { workerId: 'w-nul', events: [systemEvent('n1', 'before\u0000after'), systemEvent('n2', 'half \ud83d of a pair')] },
      { workerId: 'w-nul-neighbour', events: [systemEvent('ok', 'fine')] },
    ]);
    expect(results.flat().map((r) => r.event.data)).toMatchObject([
      { message: 'before\ufffdafter' },
      { message: 'half \ufffd of a pair' },
      { message: 'fine' },
    ]);
    expect((await store.list('w-nul', { afterId: '0', limit: 10 })).map((e) => (e.data as { message: string }).message)).toEqual([
      'before\ufffdafter',
      'half \ufffd of a pair',
    ]);
  });

  it('append — a stored uid is not stored again; the stored event is returned', async () => {
    const [original] = await store.append('w-dup', [systemEvent('same', 'first')]);
    const [again] = await store.append('w-dup', [systemEvent('same', 'second')]);
    expect(again).toEqual({ event: original!.event, duplicate: true });
    expect(again!.event.data).toMatchObject({ message: 'first' });
    expect(await store.count('w-dup')).toBe(1);
    expect(await store.lastId('w-dup')).toBe('1');
  });

  it('append — a uid twice in one batch is stored once, without a hole', async () => {
    const results = await store.append('w-dup-batch', [systemEvent('a'), systemEvent('b'), systemEvent('a'), systemEvent('c')]);
    expect(results.map((r) => [r.event.id, r.duplicate])).toEqual([
      ['1', false],
      ['2', false],
      ['1', true],
      ['3', false],
    ]);
    expect(await store.lastId('w-dup-batch')).toBe('3');
  });

  it('head — the count (of the given types) and the highest id, read together', async () => {
    await store.append('w-head', [systemEvent('h1'), systemEvent('h2')]);
    expect(await store.head('w-head')).toEqual({ total: 2, lastId: '2' });
    expect(await store.head('w-head', { types: ['control_response'] })).toEqual({ total: 0, lastId: '2' });
    expect(await store.head('w-nobody')).toEqual({ total: 0, lastId: '0' });
  });

  it("agent input — a page and a count of only what the sidecar hands to the agent: decisions and people's messages", async () => {
    const message = {
      type: 'system' as const,
      uid: 'message:m1',
      ts: new Date().toISOString(),
      data: personMessageData('run the tests', 'm1'),
      source: 'user:api:alice' as const,
    };
    const decision = {
      type: 'control_response' as const,
      uid: 'd1',
      ts: new Date().toISOString(),
      data: { request_id: 'r1', decision: 'allow' as const, decided_by: 'policy' },
    };
    // A worker's event of the subtype (stored before it was reserved) is no person's message.
    const forged = { ...message, uid: 'message:forged', source: 'worker' as const };
    await store.append('w-input', [systemEvent('i1'), message, systemEvent('i2'), decision, forged, systemEvent('i3')]);
    const page = await store.list('w-input', { afterId: '0', limit: 10, agentInput: true });
    expect(page.map((event) => [event.id, event.uid, event.source])).toEqual([
      ['2', 'message:m1', 'user:api:alice'],
      ['4', 'd1', 'worker'],
    ]);
    expect(await store.head('w-input', { agentInput: true })).toEqual({ total: 2, lastId: '6' });
    expect(await store.count('w-input', { agentInput: true })).toBe(2);
  });

  it('append — an empty batch stores nothing', async () => {
    expect(await store.append('w-empty', [])).toEqual([]);
    expect(await store.lastId('w-empty')).toBe('0');
  });

  it('append — a failing batch stores nothing and leaves the sequence intact', async () => {
    await store.append('w-atomic', [systemEvent('ok-1')]);
    const broken = { ...systemEvent('bad'), ts: 'not a time' } as IncomingEvent;
    await expect(store.append('w-atomic', [systemEvent('ok-2'), broken])).rejects.toThrow();
    expect(await store.count('w-atomic')).toBe(1);
    const [next] = await store.append('w-atomic', [systemEvent('ok-2')]);
    expect(next!.event.id).toBe('2');
  });

  it('appendMany — several workers in one call: each its own ids and duplicates, results in the order asked', async () => {
    await store.append('w-many-b', [systemEvent('b0')]);
    const results = await store.appendMany([
      { workerId: 'w-many-b', events: [systemEvent('b1'), systemEvent('b0')] },
      { workerId: 'w-many-a', events: [systemEvent('a1'), systemEvent('a2')] },
      { workerId: 'w-many-c', events: [] },
    ]);
    expect(results.map((list) => list.map((r) => [r.event.worker_id, r.event.id, r.event.uid, r.duplicate]))).toEqual([
      [
        ['w-many-b', '2', 'b1', false],
        ['w-many-b', '1', 'b0', true],
      ],
      [
        ['w-many-a', '1', 'a1', false],
        ['w-many-a', '2', 'a2', false],
      ],
      [],
    ]);
    expect(await store.appendMany([])).toEqual([]);
  });

  it('appendMany — one bad event stores nothing for any worker', async () => {
    const broken = { ...systemEvent('bad'), ts: 'not a time' } as IncomingEvent;
    await expect(
      store.appendMany([
        { workerId: 'w-many-ok', events: [systemEvent('fine')] },
        { workerId: 'w-many-bad', events: [broken] },
      ]),
    ).rejects.toThrow();
    expect(await store.count('w-many-ok')).toBe(0);
    expect(await store.count('w-many-bad')).toBe(0);
  });

  it('appendMany — a worker listed twice is refused, and nothing is stored', async () => {
    await expect(
      store.appendMany([
        { workerId: 'w-twice', events: [systemEvent('t1')] },
        { workerId: 'w-other', events: [systemEvent('o1')] },
        { workerId: 'w-twice', events: [systemEvent('t2')] },
      ]),
    ).rejects.toThrow('worker w-twice is listed twice');
    expect(await store.count('w-twice')).toBe(0);
    expect(await store.count('w-other')).toBe(0);
  });

  it("appendMany — a uid twice in one worker's batch, and uids stored before, among other workers", async () => {
    await store.append('w-mixed-a', [systemEvent('a0')]);
    const results = await store.appendMany([
      { workerId: 'w-mixed-a', events: [systemEvent('a1'), systemEvent('a0'), systemEvent('a1'), systemEvent('a2')] },
      { workerId: 'w-mixed-b', events: [systemEvent('a1'), systemEvent('b1')] },
    ]);
    expect(results.map((list) => list.map((r) => [r.event.worker_id, r.event.id, r.event.uid, r.duplicate]))).toEqual([
      [
        ['w-mixed-a', '2', 'a1', false],
        ['w-mixed-a', '1', 'a0', true],
        ['w-mixed-a', '2', 'a1', true],
        ['w-mixed-a', '3', 'a2', false],
      ],
      [
        ['w-mixed-b', '1', 'a1', false],
        ['w-mixed-b', '2', 'b1', false],
      ],
    ]);
    expect(await store.head('w-mixed-a')).toEqual({ total: 3, lastId: '3' });
    expect(await store.head('w-mixed-b')).toEqual({ total: 2, lastId: '2' });
  });

  it('list — after_id, limit and types filter, in id order', async () => {
    const events = Object.values(EXAMPLE_EVENTS) as IncomingEvent[];
    await store.append('w-list', events);
    const page = await store.list('w-list', { afterId: '2', limit: 3 });
    expect(page.map((e) => e.id)).toEqual(['3', '4', '5']);
    const tools = await store.list('w-list', { afterId: '0', limit: 100, types: ['tool_use', 'tool_result'] });
    expect(tools.map((e) => e.type)).toEqual(['tool_use', 'tool_result']);
    expect(await store.count('w-list', { types: ['control_request', 'control_response'] })).toBe(2);
    expect(await store.list('w-list', { afterId: '8', limit: 10 })).toEqual([]);
    expect(await store.list('w-nobody', { afterId: '0', limit: 10 })).toEqual([]);
  });

  it('list — before_id reads backwards: the limit events just before it, in id order; "end" is the newest page', async () => {
    await store.append('w-back', Object.values(EXAMPLE_EVENTS) as IncomingEvent[]);
    const ids = async (options: { afterId?: string; beforeId: string; limit: number }) =>
      (await store.list('w-back', { afterId: '0', ...options })).map((e) => e.id);
    expect(await ids({ beforeId: 'end', limit: 3 })).toEqual(['6', '7', '8']);
    expect(await ids({ beforeId: '6', limit: 3 })).toEqual(['3', '4', '5']);
    expect(await ids({ beforeId: '3', limit: 10 })).toEqual(['1', '2']);
    expect(await ids({ afterId: '3', beforeId: '8', limit: 10 })).toEqual(['4', '5', '6', '7']);
    expect(await ids({ beforeId: '1', limit: 10 })).toEqual([]);
  });

  it('visibility invariant — 8 appenders and 4 readers on one worker: every event once, contiguous, in order', async () => {
    await checkVisibilityInvariant(store, ['w-vis'], 8, 4, 12);
  });

  it('visibility invariant — the same with 50 workers at once', async () => {
    const workers = Array.from({ length: 50 }, (_, i) => `w-many-${i}`);
    await checkVisibilityInvariant(store, workers, 8, 4, 3);
  }, 120_000);

  it('visibility invariant — 8 writers each appending to 20 workers per appendMany call, listed in different orders', async () => {
    const workers = Array.from({ length: 20 }, (_, i) => `w-together-${i}`);
    await checkVisibilityInvariant(store, workers, 8, 2, 6, true);
  }, 120_000);
});

describe('event store — upgraded under its events', () => {
  it("a store appended to before the set-based svc_append_many goes on from each worker's last id after it", async () => {
    const database = await openDatabase({});
    try {
      // Migrated as before the migrations were grouped by owner: all in Kysely's default table.
      const {
        '2026-11-22T2000-append-many-set-based': setBased,
        '2026-11-24T2330-rules-from-decisions': rulesFromDecisions,
        '2026-11-26T2100-event-sources': sources,
        '2026-11-27T1800-rule-keys': ruleKeys,
        ...before
      } = migrationGroups['event-ingest'].migrations;
      expect(setBased && rulesFromDecisions && sources && ruleKeys).toBeDefined();
      const { error } = await new Migrator({ db: database.db, provider: { getMigrations: () => Promise.resolve(before) } }).migrateToLatest();
      expect(error).toBeUndefined();
      // Appended as the store of then did (its functions knew no sources).
      await sql`SELECT * FROM svc_append_many(${JSON.stringify([
        { worker_id: 'w-up-a', events: [systemEvent('a1'), systemEvent('a2')] },
        { worker_id: 'w-up-b', events: [systemEvent('b1')] },
      ])}::jsonb)`.execute(database.db);
      expect(await migrateToLatest(database.db, 'event-ingest')).toEqual([
        '2026-11-22T2000-append-many-set-based',
        '2026-11-24T2330-rules-from-decisions',
        '2026-11-26T2100-event-sources',
        '2026-11-27T1800-rule-keys',
      ]);
      const store = createEventStore(database.db);
      const results = await store.appendMany([
        { workerId: 'w-up-a', events: [systemEvent('a2'), systemEvent('a3')] },
        { workerId: 'w-up-b', events: [systemEvent('b2')] },
        { workerId: 'w-up-c', events: [systemEvent('c1')] },
      ]);
      expect(results.map((list) => list.map((r) => [r.event.id, r.event.uid, r.duplicate]))).toEqual([
        [
          ['2', 'a2', true],
          ['3', 'a3', false],
        ],
        [['2', 'b2', false]],
        [['1', 'c1', false]],
      ]);
    } finally {
      await database.close();
    }
  });
});

describe('event store — data survives a restart of embedded PGlite', () => {
  it('events written to a data directory are there after reopening it', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const dataDir = await mkdtemp(path.join(tmpdir(), 'svc-pglite-'));
    try {
      const first = await openDatabase({ dataDir });
      await migrateToLatest(first.db, 'event-ingest');
      await createEventStore(first.db).append('w-persist', [systemEvent('p1'), systemEvent('p2')]);
      await first.close();
      const second = await openDatabase({ dataDir });
      await migrateToLatest(second.db, 'event-ingest');
      const events = await createEventStore(second.db).list('w-persist', { afterId: '0', limit: 10 });
      expect(events.map((e) => e.uid)).toEqual(['p1', 'p2']);
      await second.close();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

/**
 * What one call of `svc_append_events` read, from auto_explain's plans of the statements inside
 * it: the most rows any scan of `events` fetched or filtered out in one loop.
 */
async function rowsReadByAppend(url: string, workerId: string, events: IncomingEvent[]): Promise<{ stored: number; widestScan: number }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const plans: string[] = [];
  client.on('notice', (notice) => plans.push(notice.message ?? ''));
  try {
    await client.query("LOAD 'auto_explain'");
    await client.query(
      'SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_analyze = on; SET client_min_messages = log',
    );
    const { rows } = await client.query('SELECT * FROM svc_append_events($1, $2::jsonb)', [workerId, JSON.stringify(events)]);
    let widestScan = 0;
    for (const line of plans.join('\n').split('\n')) {
      const removed = /Rows Removed by Filter: (\d+)/.exec(line);
      if (removed) widestScan = Math.max(widestScan, Number(removed[1]));
      const scanned = /Scan .* on events .*actual time=\S+ rows=(\d+) loops=\d+/.exec(line);
      if (scanned) widestScan = Math.max(widestScan, Number(scanned[1]));
    }
    return { stored: rows.filter((row: { known: boolean }) => !row.known).length, widestScan };
  } finally {
    await client.end();
  }
}

describe('event store on postgres — statistics that saw one busy worker only', () => {
  let postgres: PostgresProcess;
  let database: StoreDatabase;
  let store: EventStore;

  beforeAll(async () => {
    postgres = await startPostgres();
    database = await openDatabase({ url: postgres.url });
    await migrateToLatest(database.db, 'event-ingest');
    store = createEventStore(database.db);
  });

  afterAll(async () => {
    await database?.close();
    await postgres?.stop();
  });

  it('append — a worker the statistics do not know still checks its uids on the (worker_id, uid) index', async () => {
    const batch = (worker: string, n: number) => Array.from({ length: 100 }, (_, i) => systemEvent(`${worker}:${n}:${i}`));
    for (let n = 0; n < 20; n++) await store.append('w-busy', batch('w-busy', n));
    // ANALYZE while one worker has every row: any other worker now looks like it has one row.
    await sql`ANALYZE events`.execute(database.db);
    const { rows } = await sql<{ n_distinct: number }>`SELECT n_distinct FROM pg_stats WHERE tablename = 'events' AND attname = 'worker_id'`.execute(
      database.db,
    );
    expect(rows).toEqual([{ n_distinct: 1 }]);

    // Custom plans made for such a worker walked its rows once per incoming uid: 100 × 2,000.
    for (let n = 0; n < 20; n++) await store.append('w-new', batch('w-new', n));
    const appended = await rowsReadByAppend(postgres.url, 'w-new', batch('w-new', 20));
    expect(appended.stored).toBe(100);
    expect(appended.widestScan).toBeLessThanOrEqual(100);
    expect(await store.lastId('w-new')).toBe('2100');
  }, 60_000);
});
