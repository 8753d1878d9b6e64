import type { FastifyBaseLogger } from 'fastify';
import { traceContextOf, type NatsConnection } from '@svc/bus';
import { SpanKind, startSpan } from '@svc/service-kit';
import { subjects, type StoredEvent, type StoredEventBatchType, type StreamFrame } from '@svc/protocol';

/** An event's `event` frame, serialized (UTF-8, sent as a text frame) on first call, once for every listener. */
export type LiveFrame = () => Buffer;

/** Gets each live event, and its frame for those that send one (a long poll does not). */
type LiveListener = (event: StoredEvent, frame: LiveFrame) => void;

export interface LiveFeeds {
  /** Starts handing `workerId`'s announced events to `listener`; returns the function that stops it. */
  watch(workerId: string, listener: LiveListener): () => void;
}

/**
 * One NATS subscription per watched worker on this gateway, however many viewers watch it: an
 * announcement is decoded once and each event's frame serialized and encoded at most once, then
 * handed to every viewer. (A subscription per viewer made NATS send, and us parse and serialize, every event
 * once per viewer: 500 viewers of one worker cost 500 times one.)
 */
export function createLiveFeeds(nc: NatsConnection, logger: FastifyBaseLogger): LiveFeeds {
  const log = logger.child({ component: 'live-feeds' });
  const feeds = new Map<string, { listeners: Set<LiveListener>; unsubscribe(): void }>();

  function open(workerId: string) {
    const listeners = new Set<LiveListener>();
    const subscription = nc.subscribe(subjects.storedEvent(workerId), {
      callback: (err, msg) => {
        if (err) return;
        let batch: StoredEventBatchType;
        try {
          batch = msg.json<StoredEventBatchType>();
        } catch {
          log.error({ worker_id: workerId }, 'an announcement that is not JSON was ignored');
          return;
        }
        if (!Array.isArray(batch.events)) return log.error({ worker_id: workerId }, 'an announcement without events was ignored');
        // The last hop of an event's trace (docs/tracing.md): handed to this gateway's viewers.
        const trace = traceContextOf(msg);
        const span = trace
          ? startSpan('websocket send', {
              kind: SpanKind.PRODUCER,
              parent: trace,
              attributes: { 'svc.worker_id': workerId, 'svc.events': batch.events.length, 'svc.viewers': listeners.size },
            })
          : undefined;
        for (const event of batch.events) {
          let encoded: Buffer | undefined;
          const frame = () => (encoded ??= Buffer.from(JSON.stringify({ kind: 'event', event } satisfies StreamFrame)));
          for (const listener of listeners) listener(event, frame);
        }
        span?.end();
      },
    });
    return { listeners, unsubscribe: () => subscription.unsubscribe() };
  }

  return {
    watch(workerId, listener) {
      let feed = feeds.get(workerId);
      if (!feed) {
        feed = open(workerId);
        feeds.set(workerId, feed);
      }
      const watched = feed;
      watched.listeners.add(listener);
      return () => {
        watched.listeners.delete(listener);
        if (watched.listeners.size === 0 && feeds.get(workerId) === watched) {
          watched.unsubscribe();
          feeds.delete(workerId);
        }
      };
    },
  };
}
