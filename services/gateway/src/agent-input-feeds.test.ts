import { describe, expect, it } from 'vitest';
import { createFollowerStats, type StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { AgentInputLog } from './agent-input-feeds.js';

const event = (id: number, type: StoredEvent['type'] = 'assistant') =>
  ({ id: String(id), worker_id: 'w', type, uid: `u${id}`, ts: '2026-11-22T00:00:00.000Z', data: {} }) as StoredEvent;
const decision = (id: number) => event(id, 'control_response');
const ids = (page: { items: StoredEvent[] } | undefined) => page?.items.map((e) => e.id);

/** How long a store read takes here: announcements may come while one is under way. */
const STORE_READ_MS = 1;

/** The worker's stored events as a refill reads them. */
function storeOf(events: StoredEvent[]) {
  return {
    read: (afterId: string) =>
      new Promise<StoredEvent[]>((resolve) => setTimeout(() => resolve(events.filter((e) => BigInt(e.id) > BigInt(afterId))), STORE_READ_MS)),
  };
}

/** A log seeded by a store read at head `lastId` that found `inputs` after `afterId`. */
function seededLog(afterId: string, lastId: string, inputs: StoredEvent[], total = inputs.length, limit = 100): AgentInputLog {
  const log = new AgentInputLog({ read: storeOf([]).read });
  log.seeded(afterId, { items: inputs, total, last_id: lastId }, limit);
  return log;
}

describe('AgentInputLog — what a long poll may answer without reading the store', () => {
  it('knows nothing before a store read, and nothing when the read gave no head', () => {
    const log = new AgentInputLog({ read: storeOf([]).read });
    log.heard(decision(1));
    expect(log.after('0', 10)).toBeUndefined();
    log.seeded('0', { items: [], total: 0 }, 10);
    expect(log.after('0', 10)).toBeUndefined();
  });

  it('after a read, the decisions announced after the head, in id order', () => {
    const log = seededLog('5', '10', [decision(7)], 3);
    for (const heard of [event(11), event(12), decision(13), decision(14)]) log.heard(heard);
    expect(log.after('5', 10)).toEqual({ items: [decision(7), decision(13), decision(14)], total: 5 });
    expect(ids(log.after('13', 10))).toEqual(['14']);
    expect(ids(log.after('7', 1))).toEqual(['13']);
  });

  it('announcements heard during the read count from the head the read returned', () => {
    const log = new AgentInputLog({ read: storeOf([]).read });
    log.heard(decision(10));
    log.heard(decision(11));
    log.seeded('0', { items: [decision(10)], total: 1, last_id: '10' }, 100);
    expect(log.after('0', 10)).toEqual({ items: [decision(10), decision(11)], total: 2 });
  });

  it('a decision heard past a missing id (a lost announcement): the store fills the hole, counted as a refill, then both are proven', async () => {
    const store = storeOf([event(11), decision(12)]);
    const stats = createFollowerStats();
    const delivered: string[] = [];
    const log = new AgentInputLog({ read: store.read, stats, onInput: (input) => void delivered.push(input.id) });
    log.seeded('0', { items: [], total: 0, last_id: '10' }, 100);
    log.heard(decision(12));
    expect(log.after('0', 10)).toEqual({ items: [], total: 0 });
    await waitFor('the hole filled from the store', () => log.after('0', 10)?.items.length);
    expect(ids(log.after('0', 10))).toEqual(['12']);
    expect(delivered).toEqual(['12']);
    expect(stats.refills).toBe(1);
  });

  it('a decision this gateway took is proven at once when it follows on from the log; otherwise its announcement brings it', () => {
    const log = seededLog('0', '10', []);
    log.offer(decision(12));
    expect(log.after('0', 10)).toEqual({ items: [], total: 0 });
    log.offer(decision(11));
    expect(ids(log.after('0', 10))).toEqual(['11']);
    log.heard(decision(11));
    log.heard(decision(12));
    expect(log.after('0', 10)).toEqual({ items: [decision(11), decision(12)], total: 2 });
  });

  it('an announcement heard twice counts once; events at or before the head are ignored', () => {
    const log = seededLog('0', '2', []);
    for (const heard of [decision(2), decision(3), decision(3), event(4)]) log.heard(heard);
    expect(log.after('0', 10)).toEqual({ items: [decision(3)], total: 1 });
  });

  it('a full page does not prove what lies between it and the head: cursors before the head go to the store', () => {
    const log = seededLog('0', '50', [decision(1), decision(2)], 10, 2);
    expect(log.after('0', 2)).toBeUndefined();
    expect(log.after('49', 2)).toBeUndefined();
    expect(log.after('50', 2)).toEqual({ items: [], total: 10 });
  });

  it('a later read adds nothing: the announcements carry the log on from the first', () => {
    const log = seededLog('0', '10', [decision(9)]);
    log.heard(decision(11));
    log.seeded('0', { items: [decision(9)], total: 1, last_id: '9' }, 100);
    log.seeded('11', { items: [decision(20)], total: 5, last_id: '20' }, 100);
    expect(ids(log.after('0', 10))).toEqual(['9', '11']);
    expect(log.after('11', 10)).toEqual({ items: [], total: 2 });
  });

  it('keeps the latest 256 inputs: a cursor older than those goes to the store', () => {
    const log = seededLog('0', '0', []);
    for (let id = 1; id <= 300; id++) log.heard(decision(id));
    expect(log.after('43', 1000)).toBeUndefined();
    expect(log.after('44', 1000)?.items).toHaveLength(256);
    expect(log.after('44', 1000)?.total).toBe(300);
  });

  it('a refill that fails: the log starts over from the store', async () => {
    const log = new AgentInputLog({ read: () => Promise.reject(new Error('bus_unavailable')) });
    log.seeded('0', { items: [], total: 0, last_id: '0' }, 10);
    log.heard(event(2));
    expect(log.after('0', 10)).toEqual({ items: [], total: 0 });
    await waitFor('the failed refill', () => log.after('0', 10) === undefined);
    expect(log.after('0', 10)).toBeUndefined();
  });

  it('forgets everything when told announcements may have been lost', () => {
    const log = seededLog('0', '3', [decision(3)]);
    log.forget();
    expect(log.after('0', 10)).toBeUndefined();
  });
});
