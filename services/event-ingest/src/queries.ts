import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import {
  createChecker,
  ListEventsRequest,
  PurgeEventsRequest,
  subjects,
  type ListEventsRequestType,
  type ListEventsResultType,
  type PurgeEventsRequestType,
  type PurgeEventsResultType,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { EventStore } from '@svc/store';

/**
 * Answers the event queries the gateway sends: a page of a worker's events after a cursor, and
 * `total`, the number of the worker's stored events that match the type filter (all of them,
 * not only those after the cursor), and on request `last_id`.
 */
export function serveEventQueries(nc: NatsConnection, store: EventStore, logger: Logger): Subscription {
  return serveRpc<ListEventsRequestType, ListEventsResultType>(
    nc,
    subjects.rpc.listEvents,
    async (request) => {
      const selection = { types: request.types, agentInput: request.agent_input };
      const page = () => store.list(request.worker_id, { afterId: request.after_id, beforeId: request.before_id, limit: request.limit, ...selection });
      if (request.with_last_id) {
        // The head first, then the page: whatever the head counts, the page has seen.
        const { total, lastId } = await store.head(request.worker_id, selection);
        return { items: await page(), total, last_id: lastId };
      }
      const [items, total] = await Promise.all([page(), store.count(request.worker_id, selection)]);
      return { items, total };
    },
    { logger, queue: 'event-ingest', checker: createChecker(ListEventsRequest) },
  );
}

/**
 * How the purge of an ended worker's events yields to appends: rows per statement, and the pause
 * between (a pace above what a busy deployment stores). A faster pace raised the POST → viewer
 * p99 beyond its target (docs/benchmarks.md#cost-curves): every deleted row is WAL and fsync
 * that a commit of new events waits behind.
 */
const PURGE_BATCH = { batchSize: 500, pauseMs: 100 };

/**
 * Removes an ended worker's events when the session service says its retention is over
 * (docs/event-ingest.md "Retention"): event-ingest owns the events table, so it deletes.
 */
export function servePurges(nc: NatsConnection, store: EventStore, logger: Logger): Subscription {
  const log = logger.child({ component: 'retention' });
  return serveRpc<PurgeEventsRequestType, PurgeEventsResultType>(
    nc,
    subjects.rpc.purgeEvents,
    async (request) => {
      const started = Date.now();
      const deleted = await store.purge(request.worker_id, PURGE_BATCH);
      log.info({ worker_id: request.worker_id, deleted, ms: Date.now() - started }, 'purged the events of an ended worker');
      return { deleted };
    },
    { logger, queue: 'event-ingest', checker: createChecker(PurgeEventsRequest) },
  );
}
