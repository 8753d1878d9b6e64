import type { AppendResult, EventStore, WorkerEvents } from '@svc/store';

/** The one method of the store a partition consumer appends with. */
export type Appender = Pick<EventStore, 'appendMany'>;

/** Shared appends stored at once by default. */
const COMMITS_IN_FLIGHT = 3;
/** Events waiting, at least, for a further append to start beside those being stored. */
const PARALLEL_FROM_EVENTS = 1000;

interface Waiting {
  batches: readonly WorkerEvents[];
  resolve(results: AppendResult[][]): void;
  reject(err: unknown): void;
}

/**
 * Group commit for the partitions of one replica: an append asked for while another is being
 * stored waits for it, then goes with everything else that waited, in one `appendMany` (one
 * transaction, one commit). Each partition consumer has at most one append outstanding, and no
 * worker belongs to two partitions, so a shared call never names a worker twice.
 *
 * Under many workers with an event each, the partitions committing on their own made hundreds
 * of small commits a second, and the commits, not the events, were most of PostgreSQL's CPU
 * (docs/benchmarks.md#ingest). An idle replica's append still goes at once.
 *
 * Under a backlog (at least 1,000 events waiting), up to three shared appends are stored at
 * once, each on its own connection: a commit waiting for its WAL flush no longer holds up the
 * next group's insert. They never name the same worker (each partition has one append
 * outstanding), so none takes a lock another needs, and each worker's events still go in their
 * partition's order. Below that, one at a time: small groups share commits best, and parallel
 * small commits raised the POST → viewer latency at moderate rates while batched POSTs stored
 * more with them (docs/benchmarks.md#ingest).
 *
 * A shared append that fails is tried again for each partition on its own, so an append that
 * cannot be stored fails only its own partition (which retries it), not every partition.
 */
export function groupCommit(store: Appender, options: { inFlight?: number; parallelFrom?: number } = {}): Appender {
  const inFlight = options.inFlight ?? COMMITS_IN_FLIGHT;
  const parallelFrom = options.parallelFrom ?? PARALLEL_FROM_EVENTS;
  /** Shared appends being stored now. */
  let storing = 0;
  let waiting: Waiting[] = [];
  let waitingEvents = 0;

  async function storeEach(group: Waiting[]): Promise<void> {
    if (group.length === 1) {
      const [only] = group;
      return store.appendMany(only!.batches).then(only!.resolve, only!.reject);
    }
    try {
      const results = await store.appendMany(group.flatMap((request) => request.batches));
      let offset = 0;
      for (const request of group) {
        request.resolve(results.slice(offset, offset + request.batches.length));
        offset += request.batches.length;
      }
    } catch {
      await Promise.all(group.map((request) => store.appendMany(request.batches).then(request.resolve, request.reject)));
    }
  }

  async function drain(): Promise<void> {
    storing++;
    try {
      while (waiting.length > 0) {
        const group = waiting;
        waiting = [];
        waitingEvents = 0;
        await storeEach(group);
      }
    } finally {
      storing--;
    }
  }

  return {
    appendMany(batches) {
      return new Promise<AppendResult[][]>((resolve, reject) => {
        waiting.push({ batches, resolve, reject });
        for (const batch of batches) waitingEvents += batch.events.length;
        if (storing === 0 || (storing < inFlight && waitingEvents >= parallelFrom)) void drain();
      });
    },
  };
}
