import { serveHealth, type NatsConnection } from '@svc/bus';
import { partitionsOfReplica } from '@svc/protocol';
import type { Logger, RunningService } from '@svc/service-kit';
import { migrateToLatest, pingDatabase, type Database, type Kysely } from '@svc/store';

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
 * Starts event-ingest: it owns the event store's tables, so it migrates them first. The
 * JetStream consumer and the event queries are not implemented yet and it says so at start.
 */
export async function start(deps: EventIngestDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'event-ingest', replica: deps.replicaIndex });
  const partitions = partitionsOfReplica(deps.replicaIndex, deps.replicaCount);
  const applied = await migrateToLatest(deps.db);
  if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
  const health = serveHealth(deps.nc, 'event-ingest', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  log.warn({ partitions }, 'event-ingest: consuming incoming events is not implemented yet; only migrations and health run');
  return {
    async stop() {
      health.unsubscribe();
    },
  };
}
