import { counter, decisionsCounter, gauge, histogram, LATENCY_BUCKETS_S } from '@svc/service-kit';

/** event-ingest's metrics (docs/metrics.md). */
export const ingestMetrics = {
  stored: counter({ name: 'svc_events_stored_total', help: 'Events event-ingest stored (new ones: a redelivered event already stored is not counted again).' }),
  announced: counter({
    name: 'svc_events_announced_total',
    help: 'Stored events event-ingest announced to viewers and services, each once (a replica that restarts may announce some again).',
  }),
  appendSeconds: histogram({
    name: 'svc_ingest_append_duration_seconds',
    help: 'How long one append transaction took (every worker of a pull, one commit), successful attempts only.',
    buckets: LATENCY_BUCKETS_S,
  }),
  appendFailures: counter({ name: 'svc_ingest_append_failures_total', help: 'Append transactions that failed and were retried (the store away, mostly).' }),
  policyDecisions: decisionsCounter(),
};

/** The partitions this process consumes, and how to read each one's backlog (several replicas may share a process in tests). */
const backlogs = new Map<number, () => Promise<number>>();

gauge({
  name: 'svc_ingest_pending_messages',
  help: "Incoming messages of a partition not yet stored and acknowledged (JetStream's pending and unacknowledged): the ingest lag.",
  labelNames: ['partition'],
  async collect() {
    this.reset();
    await Promise.all(
      [...backlogs].map(async ([partition, read]) => {
        const pending = await read().catch(() => undefined);
        if (pending !== undefined) this.set({ partition: String(partition) }, pending);
      }),
    );
  },
});

/** Reports the backlog of these partitions while the replica runs; the answer stops it. */
export function reportBacklogs(partitions: readonly number[], read: (partition: number) => Promise<number>): () => void {
  for (const partition of partitions) backlogs.set(partition, () => read(partition));
  return () => partitions.forEach((partition) => backlogs.delete(partition));
}
