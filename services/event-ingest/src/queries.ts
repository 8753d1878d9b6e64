import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import { createChecker, ListEventsRequest, subjects, type ListEventsRequestType, type ListEventsResultType } from '@svc/protocol';
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
      const page = () => store.list(request.worker_id, { afterId: request.after_id, beforeId: request.before_id, limit: request.limit, types: request.types });
      if (request.with_last_id) {
        // The head first, then the page: whatever the head counts, the page has seen.
        const { total, lastId } = await store.head(request.worker_id, request.types);
        return { items: await page(), total, last_id: lastId };
      }
      const [items, total] = await Promise.all([page(), store.count(request.worker_id, request.types)]);
      return { items, total };
    },
    { logger, queue: 'event-ingest', checker: createChecker(ListEventsRequest) },
  );
}
