import { createDurablePublisher, partitionBacklog, serveHealth, type NatsConnection } from '@svc/bus';
import { partitionsOfReplica, type StoredEventBatchType } from '@svc/protocol';
import type { Logger, RunningService } from '@svc/service-kit';
import { createEventStore, prepareTables, type StoreUse, pingDatabase, type Database, type Kysely } from '@svc/store';
import { createAcknowledgements } from './acknowledgements.js';
import { createAnnouncer } from './announcer.js';
import { serveDecisionAppends } from './decision-appends.js';
import { consumePartition } from './ingest.js';
import { reportBacklogs } from './metrics.js';
import { groupCommit } from './group-commit.js';
import { serveEventQueries, servePurges } from './queries.js';

export interface EventIngestDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
  /** This replica's index (a StatefulSet ordinal) and the replica count: they pick its partitions. */
  replicaIndex: number;
  replicaCount: number;
  /** Tests only: drops the announcements for which it returns true, as if lost on the way. */
  dropAnnouncement?: ((batch: StoredEventBatchType) => boolean) | undefined;
}

/** The store's tables this service needs: the event log, which it owns. */
export const tables: StoreUse = { owns: 'event-ingest' };

/**
 * Starts event-ingest: migrates the event tables (it owns them), consumes the partitions of
 * incoming events this replica owns, appends the decisions the control service asks for on
 * those partitions (the one writer of their workers' events), announces what it stores, and
 * answers event queries.
 */
export async function start(deps: EventIngestDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'event-ingest', replica: deps.replicaIndex });
  const partitions = partitionsOfReplica(deps.replicaIndex, deps.replicaCount);
  const applied = await prepareTables(deps.db, tables);
  if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
  const store = createEventStore(deps.db);
  const publisher = createDurablePublisher(deps.nc);
  const acknowledgements = createAcknowledgements();
  const announcer = createAnnouncer({
    nc: deps.nc,
    publisher,
    logger: log,
    acknowledgements,
    dropAnnouncement: deps.dropAnnouncement,
  });
  // The partitions' appends share commits (group-commit.ts).
  const appender = groupCommit(store);
  const consumers = await Promise.all(partitions.map((partition) => consumePartition(deps.nc, appender, announcer, acknowledgements, partition, log)));
  const decisionAppends = serveDecisionAppends({
    nc: deps.nc,
    partitions: new Map(partitions.map((partition, index) => [partition, consumers[index]!])),
    store,
    announcer,
    logger: log,
  });
  const queries = serveEventQueries(deps.nc, store, log);
  const purges = servePurges(deps.nc, store, log);
  const health = serveHealth(deps.nc, 'event-ingest', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  const stopReporting = reportBacklogs(partitions, (partition) => partitionBacklog(deps.nc, partition));
  log.info({ partitions }, 'event-ingest consuming');
  return {
    async stop() {
      stopReporting();
      health.unsubscribe();
      queries.unsubscribe();
      purges.unsubscribe();
      decisionAppends.forEach((subscription) => subscription.unsubscribe());
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      acknowledgements.flush();
      publisher.close();
    },
  };
}
