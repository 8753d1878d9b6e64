import type { StoredEvent, WorkerActivity } from '@svc/protocol';
import type { WorkerView } from './worker-view.js';

/** How a viewer reads a worker's past: pages backwards (`GET …/sdk-events?before_id=`) and the requests still open. */
export interface HistoryReader {
  /** The `limit` events just before `beforeId` (`end`: the newest), in id order. */
  before(beforeId: string, limit: number): Promise<readonly StoredEvent[]>;
  /** The worker's open requests, oldest first (`GET …/control/requests?state=open`). */
  openRequests(): Promise<readonly StoredEvent<'control_request'>[]>;
  /** The agent's activity from the worker's record (`GET /v1/workers/{id}`): the tail may be younger than its last report. */
  activity?(): Promise<WorkerActivity | undefined>;
}

/** How many events a view opened at the end holds at first: a screen or two, read in one request. */
const TAIL_EVENTS = 200;

/**
 * Opens a view at the end of a worker's history, however long: its open requests, then its last
 * page. Follow the stream from `view.lastId` afterwards (`followEventStream`), and read earlier
 * pages with `readEarlier` as the person scrolls up. The open requests are read first: one
 * decided in between has its decision in the tail, which closes it.
 */
export async function openAtEnd(view: WorkerView, reader: HistoryReader, tailSize = TAIL_EVENTS): Promise<void> {
  const activity = await reader.activity?.();
  const open = await reader.openRequests();
  const tail = await reader.before('end', tailSize);
  view.startAt(open, tail, activity);
}

/**
 * Reads the page before the first event the view holds and puts it in front; one read at a time
 * per view (a scroll fires many times). Answers how many events were added (0: none left, or a
 * read already under way).
 */
export function earlierPages(view: WorkerView, reader: HistoryReader, pageSize: number): () => Promise<number> {
  let reading: Promise<number> | undefined;
  return () => {
    if (reading || !view.hasEarlier) return Promise.resolve(0);
    const firstId = view.events[0]!.id;
    reading = reader
      .before(firstId, pageSize)
      .then((page) => (view.events[0]?.id === firstId ? view.prepend(page) : 0))
      .finally(() => (reading = undefined));
    return reading;
  };
}
