import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingEvent } from '@svc/protocol';
import { createEventStore, migrateToLatest, openDatabase, type EventStore, type StoreDatabase, type WorkerEvents } from '@svc/store';
import { systemEvent } from '@svc/test-support';
import { groupCommit, type Appender } from './group-commit.js';

describe('group commit — the partitions of a replica append together', () => {
  let database: StoreDatabase;
  let store: EventStore;
  /** What reached the store: the workers of each `appendMany` call. */
  let calls: string[][];
  let counting: Appender;

  beforeAll(async () => {
    database = await openDatabase({});
    await migrateToLatest(database.db, 'event-ingest');
    store = createEventStore(database.db);
    counting = {
      appendMany(batches) {
        calls.push(batches.map((batch) => batch.workerId));
        return store.appendMany(batches);
      },
    };
  });
  afterAll(async () => {
    await database?.close();
  });

  const batch = (workerId: string, ...uids: string[]): WorkerEvents[] => [{ workerId, events: uids.map((uid) => systemEvent(uid)) }];
  const idsOf = (results: Awaited<ReturnType<Appender['appendMany']>>) =>
    results.map((list) => list.map((r) => `${r.event.worker_id}/${r.event.id}/${r.event.uid}`));

  it('one in flight: an append asked for while another is stored waits, then goes with the others that waited, in one call', async () => {
    calls = [];
    const appender = groupCommit(counting, { inFlight: 1 });
    const first = appender.appendMany(batch('w-a', 'a1', 'a2'));
    const second = appender.appendMany(batch('w-b', 'b1'));
    const third = appender.appendMany([...batch('w-c', 'c1'), ...batch('w-d', 'd1')]);
    expect(idsOf(await first)).toEqual([['w-a/1/a1', 'w-a/2/a2']]);
    expect(idsOf(await second)).toEqual([['w-b/1/b1']]);
    expect(idsOf(await third)).toEqual([['w-c/1/c1'], ['w-d/1/d1']]);
    expect(calls).toEqual([['w-a'], ['w-b', 'w-c', 'w-d']]);
  });

  it('two in flight with a backlog: the second append goes at once beside the first; the rest wait and go together in the first free slot', async () => {
    calls = [];
    const appender = groupCommit(counting, { inFlight: 2, parallelFrom: 1 });
    const first = appender.appendMany(batch('w-h', 'h1'));
    const second = appender.appendMany(batch('w-i', 'i1'));
    const third = appender.appendMany(batch('w-j', 'j1'));
    const fourth = appender.appendMany(batch('w-k', 'k1', 'k2'));
    expect(idsOf(await first)).toEqual([['w-h/1/h1']]);
    expect(idsOf(await second)).toEqual([['w-i/1/i1']]);
    expect(idsOf(await third)).toEqual([['w-j/1/j1']]);
    expect(idsOf(await fourth)).toEqual([['w-k/1/k1', 'w-k/2/k2']]);
    expect(calls).toEqual([['w-h'], ['w-i'], ['w-j', 'w-k']]);
  });

  it('without a backlog (fewer events waiting than parallelFrom), one at a time even when more may be in flight', async () => {
    calls = [];
    const appender = groupCommit(counting, { inFlight: 3, parallelFrom: 3 });
    const first = appender.appendMany(batch('w-l', 'l1'));
    const second = appender.appendMany(batch('w-m', 'm1'));
    // Three events now wait: a backlog, so this one starts beside the first.
    const third = appender.appendMany(batch('w-n', 'n1', 'n2'));
    await Promise.all([first, second, third]);
    expect(calls).toEqual([['w-l'], ['w-m', 'w-n']]);
  });

  it('an append on an idle replica goes at once, alone', async () => {
    calls = [];
    const appender = groupCommit(counting);
    expect(idsOf(await appender.appendMany(batch('w-a', 'a3')))).toEqual([['w-a/3/a3']]);
    expect(idsOf(await appender.appendMany(batch('w-b', 'b2')))).toEqual([['w-b/2/b2']]);
    expect(calls).toEqual([['w-a'], ['w-b']]);
  });

  it('a shared append that fails is tried for each partition alone: only the one that cannot be stored fails', async () => {
    calls = [];
    const appender = groupCommit(counting, { inFlight: 1 });
    const broken = { ...systemEvent('bad'), ts: 'not a time' } as IncomingEvent;
    const first = appender.appendMany(batch('w-e', 'e1'));
    const failing = appender.appendMany([{ workerId: 'w-f', events: [broken] }]);
    const fine = appender.appendMany(batch('w-g', 'g1'));
    expect(idsOf(await first)).toEqual([['w-e/1/e1']]);
    await expect(failing).rejects.toThrow();
    expect(idsOf(await fine)).toEqual([['w-g/1/g1']]);
    expect(calls.slice(0, 2)).toEqual([['w-e'], ['w-f', 'w-g']]);
    expect(calls.slice(2).sort()).toEqual([['w-f'], ['w-g']]);
    expect(await store.count('w-f')).toBe(0);
    // The appender keeps working after a failure.
    expect(idsOf(await appender.appendMany(batch('w-f', 'f1')))).toEqual([['w-f/1/f1']]);
  });
});
