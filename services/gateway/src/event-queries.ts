import { requestJson, type NatsConnection } from '@svc/bus';
import { subjects, type ListEventsRequestType, type ListEventsResultType } from '@svc/protocol';

/**
 * A list query is sent again once when no replica answers in time: an event-ingest replica that
 * dies (or restarts) with the query in hand never answers, and its partner will.
 */
const QUERY_RETRIES = 1;

/** Stored events of one worker from event-ingest (the gateway never reads the store itself). */
export function listStoredEvents(nc: NatsConnection, query: ListEventsRequestType, requestId: string): Promise<ListEventsResultType> {
  return requestJson<ListEventsResultType>(nc, subjects.rpc.listEvents, query, { requestId, retries: QUERY_RETRIES });
}
