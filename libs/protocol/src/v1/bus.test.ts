import { describe, expect, it } from 'vitest';
import { EVENT_PARTITIONS, incomingMessageId, partitionOfWorker, partitionsOfReplica, subjects } from './bus.js';

describe('protocol v1 bus — partitions', () => {
  it('a worker always maps to the same partition in range', () => {
    for (let i = 0; i < 1000; i++) {
      const worker = `wrk_${i}`;
      const partition = partitionOfWorker(worker);
      expect(partition).toBe(partitionOfWorker(worker));
      expect(partition).toBeGreaterThanOrEqual(0);
      expect(partition).toBeLessThan(EVENT_PARTITIONS);
    }
  });

  it('the hash is FNV-1a, so other languages can compute it', () => {
    // FNV-1a 32-bit of "a" is 0xe40c292c.
    expect(partitionOfWorker('a', 2 ** 32)).toBe(0xe40c292c);
  });

  it('replicas own disjoint partitions that together cover all', () => {
    for (const count of [1, 2, 3, 5, 16]) {
      const owned = Array.from({ length: count }, (_, index) => partitionsOfReplica(index, count)).flat();
      expect(owned.sort((a, b) => a - b)).toEqual(Array.from({ length: EVENT_PARTITIONS }, (_, p) => p));
    }
  });

  it('an impossible replica index or count is refused', () => {
    expect(() => partitionsOfReplica(2, 2)).toThrow(/replica index must be in 0..1, got 2/);
    expect(() => partitionsOfReplica(0, 0)).toThrow(/replica count must be a positive integer/);
  });

  it('subjects and message ids are built from the worker id', () => {
    expect(subjects.incomingEvent(3, 'wrk_1')).toBe('svc.events.incoming.3.wrk_1');
    expect(subjects.storedEvent('wrk_1')).toBe('svc.events.stored.wrk_1');
    expect(incomingMessageId('wrk_1', 'boot:7')).toBe('wrk_1:boot:7');
  });
});
