import { WORKER_STATUSES, type WorkerStatus } from '@svc/protocol';
import { gauge } from '@svc/service-kit';

/** How to count workers by status: the session store of a session service running in this process. */
let countSource: (() => Promise<Array<{ status: WorkerStatus; count: number }>>) | undefined;

// Every session replica reads the same table: any one of them tells the count.
gauge({
  name: 'svc_workers',
  help: 'Workers (one per session) in each status, read from the session store at each scrape.',
  labelNames: ['status'],
  async collect() {
    const counts = await countSource?.().catch(() => undefined);
    if (!counts) return;
    for (const status of WORKER_STATUSES) this.set({ status }, counts.find((row) => row.status === status)?.count ?? 0);
  },
});

/** Counts with this store while the service runs; the answer stops it. */
export function reportWorkerCounts(count: NonNullable<typeof countSource>): () => void {
  countSource = count;
  return () => {
    if (countSource === count) countSource = undefined;
  };
}
