import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IncomingEvent } from '@svc/protocol';
import { createEventStore, migrateToLatest, openDatabase, type EventStore, type StoreDatabase, type WorkerEvents } from '@svc/store';
import { systemEvent } from '@svc/test-support';
import { sharedCommits, type Appender } from './shared-commits.js';

describe('shared commits — the partitions of a replica append together', () => {
  let database: StoreDatabase;
  let store: EventStore;
  /** What reached the store: the workers of each `appendMany` call. */
  let calls: string[][];
  let counting: Appender;

  beforeAll(async () => {
    database = await openDatabase({});
    await migrateToLatest(database.db, 'event-log');
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

  it('an append asked for while another is stored waits, then goes with the others that waited, in one call', async () => {
    calls = [];
    const appender = sharedCommits(counting);
    const first = appender.appendMany(batch('w-a', 'a1', 'a2'));
    const second = appender.appendMany(batch('w-b', 'b1'));
    const third = appender.appendMany([...batch('w-c', 'c1'), ...batch('w-d', 'd1')]);
    expect(idsOf(await first)).toEqual([['w-a/1/a1', 'w-a/2/a2']]);
    expect(idsOf(await second)).toEqual([['w-b/1/b1']]);
    expect(idsOf(await third)).toEqual([['w-c/1/c1'], ['w-d/1/d1']]);
    expect(calls).toEqual([['w-a'], ['w-b', 'w-c', 'w-d']]);
  });

  it('an append on an idle replica goes at once, alone', async () => {
    calls = [];
    const appender = sharedCommits(counting);
    expect(idsOf(await appender.appendMany(batch('w-a', 'a3')))).toEqual([['w-a/3/a3']]);
    expect(idsOf(await appender.appendMany(batch('w-b', 'b2')))).toEqual([['w-b/2/b2']]);
    expect(calls).toEqual([['w-a'], ['w-b']]);
  });

  it('a shared append that fails is tried for each partition alone: only the one that cannot be stored fails', async () => {
    calls = [];
    const appender = sharedCommits(counting);
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
