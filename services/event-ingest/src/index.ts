import { createDurablePublisher, serveHealth, type NatsConnection } from '@svc/bus';
import { partitionsOfReplica } from '@svc/protocol';
import type { Logger, RunningService } from '@svc/service-kit';
import { createEventStore, migrateToLatest, pingDatabase, type Database, type Kysely } from '@svc/store';
import { consumePartition } from './ingest.js';
import { sharedCommits } from './shared-commits.js';
import { serveEventQueries } from './queries.js';

export interface EventIngestDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
  /** This replica's index (a StatefulSet ordinal) and the replica count: they pick its partitions. */
  replicaIndex: number;
  replicaCount: number;
}

/**
 * Starts event-ingest: migrates the event tables (it owns them), consumes the partitions of
 * incoming events this replica owns, and answers event queries.
 */
export async function start(deps: EventIngestDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'event-ingest', replica: deps.replicaIndex });
  const partitions = partitionsOfReplica(deps.replicaIndex, deps.replicaCount);
  const applied = await migrateToLatest(deps.db);
  if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
  const store = createEventStore(deps.db);
  const announcer = createDurablePublisher(deps.nc);
  // The partitions' appends share commits (shared-commits.ts).
  const appender = sharedCommits(store);
  const consumers = await Promise.all(partitions.map((partition) => consumePartition(deps.nc, appender, announcer, partition, log)));
  const queries = serveEventQueries(deps.nc, store, log);
  const health = serveHealth(deps.nc, 'event-ingest', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  log.info({ partitions }, 'event-ingest consuming');
  return {
    async stop() {
      health.unsubscribe();
      queries.unsubscribe();
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      announcer.close();
    },
  };
}
