import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import { createChecker, ListEventsRequest, subjects, type ListEventsRequestType, type ListResponseOf, type StoredEvent } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { EventStore } from '@svc/store';

/**
 * Answers the event queries the gateway sends: a page of a worker's events after a cursor, and
 * `total`, the number of the worker's stored events that match the type filter (all of them,
 * not only those after the cursor).
 */
export function serveEventQueries(nc: NatsConnection, store: EventStore, logger: Logger): Subscription {
  return serveRpc<ListEventsRequestType, ListResponseOf<StoredEvent>>(
    nc,
    subjects.rpc.listEvents,
    async (request) => {
      const [items, total] = await Promise.all([
        store.list(request.worker_id, { afterId: request.after_id, limit: request.limit, types: request.types }),
        store.count(request.worker_id, request.types),
      ]);
      return { items, total };
    },
    { logger, queue: 'event-ingest', checker: createChecker(ListEventsRequest) },
  );
}
