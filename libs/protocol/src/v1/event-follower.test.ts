import { describe, expect, it } from 'vitest';
import type { StoredEvent } from './envelope.js';
import { createFollowerStats, EventFollower } from './event-follower.js';

const eventOf = (id: number): StoredEvent =>
  ({ id: String(id), worker_id: 'wrk_1', type: 'assistant', uid: `u${id}`, ts: '2026-11-24T00:00:00.000Z', data: { text: `#${id}` } }) as StoredEvent;

/** How long a store read takes here: events are heard while one is under way. */
const STORE_READ_MS = 1;

/** A store holding events 1..`head`, read a page at a time; `reads` records each cursor read after. */
function storeOf(head: { value: number }, pageSize = 3) {
  const reads: string[] = [];
  return {
    reads,
    pageSize,
    read: async (afterId: string) => {
      reads.push(afterId);
      await new Promise((resolve) => setTimeout(resolve, STORE_READ_MS));
      const from = Number(afterId) + 1;
      return Array.from({ length: Math.max(0, Math.min(pageSize, head.value - from + 1)) }, (_, i) => eventOf(from + i));
    },
  };
}

function follow(afterId: string, store: ReturnType<typeof storeOf>) {
  const delivered: Array<{ id: string; live: string | undefined }> = [];
  const errors: unknown[] = [];
  const stats = createFollowerStats();
  const follower = new EventFollower<string>(afterId, {
    read: store.read,
    pageSize: store.pageSize,
    deliver: (event, live) => void delivered.push({ id: event.id, live }),
    onError: (err) => void errors.push(err),
    stats,
  });
  return { follower, delivered, errors, stats, ids: () => delivered.map((d) => Number(d.id)) };
}

describe('EventFollower', () => {
  it('replays the store page by page, then live events heard meanwhile, each once and in order; no refill', async () => {
    const head = { value: 7 };
    const store = storeOf(head);
    const { follower, ids, delivered, stats } = follow('2', store);
    const started = follower.start();
    // Committed and announced while the replay reads: some of them the replay also finds.
    head.value = 9;
    for (const id of [6, 7, 8, 9]) follower.heard(eventOf(id), `frame${id}`);
    await started;
    follower.heard(eventOf(10), 'frame10');
    expect(ids()).toEqual([3, 4, 5, 6, 7, 8, 9, 10]);
    expect(store.reads).toEqual(['2', '5', '8']);
    expect(delivered.at(-1)).toEqual({ id: '10', live: 'frame10' });
    expect(stats.refills).toBe(0);
  });

  it('ignores repeats; a live event after a hole waits while the store fills the hole (one refill)', async () => {
    const head = { value: 3 };
    const store = storeOf(head, 100);
    const { follower, ids, stats } = follow('0', store);
    await follower.start();
    follower.heard(eventOf(3));
    head.value = 6;
    follower.heard(eventOf(6), 'frame6'); // 4 and 5: their announcement was lost
    follower.heard(eventOf(7), 'frame7'); // waits behind the refill
    expect(ids()).toEqual([1, 2, 3]);
    await follower.settled();
    expect(ids()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(stats.refills).toBe(1);
  });

  it('without a replay (the caller read the store up to the cursor): live events follow on, a hole is refilled', async () => {
    const head = { value: 12 };
    const store = storeOf(head, 100);
    const { follower, ids, stats } = follow('0', store);
    follower.heard(eventOf(10));
    follower.heard(eventOf(11));
    follower.restartAt('9');
    await follower.start({ replay: false });
    expect(ids()).toEqual([10, 11]);
    expect(stats.refills).toBe(0);
    expect(store.reads).toEqual([]);

    const gap = follow('0', store);
    gap.follower.heard(eventOf(12));
    gap.follower.restartAt('9');
    await gap.follower.start({ replay: false });
    expect(gap.ids()).toEqual([10, 11, 12]);
    expect(gap.stats.refills).toBe(1);
  });

  it('offer: an event known to be stored is delivered only when it follows on with nothing waiting; its announcement is then a repeat', async () => {
    const head = { value: 2 };
    const store = storeOf(head, 100);
    const { follower, ids, stats } = follow('0', store);
    expect(follower.offer(eventOf(1))).toBe(false); // not started
    await follower.start();
    expect(follower.offer(eventOf(4))).toBe(false); // 3 first
    expect(follower.offer(eventOf(3))).toBe(true);
    follower.heard(eventOf(3));
    follower.heard(eventOf(4));
    expect(ids()).toEqual([1, 2, 3, 4]);
    expect(stats.refills).toBe(0);
  });

  it('a failed store read stops it and says so; nothing is delivered after', async () => {
    const errors: unknown[] = [];
    const delivered: string[] = [];
    const follower = new EventFollower('0', {
      read: () => Promise.reject(new Error('store_unavailable')),
      pageSize: 10,
      deliver: (event) => void delivered.push(event.id),
      onError: (err) => void errors.push(err),
    });
    await follower.start();
    follower.heard(eventOf(1));
    expect(errors).toEqual([new Error('store_unavailable')]);
    expect(delivered).toEqual([]);
  });
});
