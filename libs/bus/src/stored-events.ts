import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { streams, subjects, type StoredEvent, type StoredEventBatchType } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { NatsConnection } from './connection.js';

export interface StoredEventSubscription {
  stop(): Promise<void>;
}

export interface StoredEventSubscriberOptions {
  /** Names the durable consumer: a subscriber that restarts with the same name resumes where it was. */
  durableName: string;
  /** Only this worker's events (default: every worker's). */
  workerId?: string;
  /**
   * Only the events that end a worker's agent (`agent_exit`), from their own stream
   * (`SVC_EVENTS_LIFECYCLE`): a subscriber that needs nothing else is not woken by every event.
   */
  lifecycleOnly?: boolean;
  /** Where a new durable starts: every event the stream still keeps, or only new ones. */
  from?: 'all' | 'new';
  /**
   * Called once per stored event, in id order per worker. An announcement (one commit's events)
   * is acknowledged when the handler has resolved for each of its events.
   */
  handler: (event: StoredEvent) => Promise<void> | void;
  logger: Logger;
}

/**
 * How an internal service follows stored events durably (docs/bus.md): a JetStream durable
 * consumer on `SVC_EVENTS_STORED` (or `SVC_EVENTS_LIFECYCLE` with `lifecycleOnly`). An event whose handler fails is delivered again after a
 * pause; the stream keeps events for 24 hours (or 1 GiB), so a subscriber down for less misses
 * nothing. Within one run each event is handed over once; after a restart, the events of an
 * announcement that was handled only in part are handed over again (at least once).
 */
export async function subscribeStoredEvents(nc: NatsConnection, options: StoredEventSubscriberOptions): Promise<StoredEventSubscription> {
  const log = options.logger.child({ component: 'stored-events', durable: options.durableName });
  const jsm = await jetstreamManager(nc);
  const stream = options.lifecycleOnly ? streams.lifecycleEvents.name : streams.storedEvents.name;
  const subjectOf = options.lifecycleOnly ? subjects.lifecycleEvent : subjects.storedEvent;
  await jsm.consumers.add(stream, {
    durable_name: options.durableName,
    filter_subject: options.workerId ? subjectOf(options.workerId) : options.lifecycleOnly ? subjects.lifecycleAll : subjects.storedAll,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: options.from === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
    ack_wait: nanos(30_000),
    // One event in flight at a time keeps each worker's order through redeliveries.
    max_ack_pending: 1,
  });
  const consumer = await jetstream(nc).consumers.get(stream, options.durableName);
  const messages = await consumer.consume({ max_messages: 100 });
  // The highest id handed over per worker: a repeated announcement (after an event-ingest crash,
  // or this message again after a failure part-way) hands over only what is new.
  const handled = new Map<string, bigint>();
  const loop = (async () => {
    for await (const msg of messages) {
      try {
        const batch = msg.json<StoredEventBatchType>();
        for (const event of batch.events) {
          const id = BigInt(event.id);
          if (id <= (handled.get(event.worker_id) ?? 0n)) continue;
          await options.handler(event);
          handled.set(event.worker_id, id);
        }
        msg.ack();
      } catch (err) {
        log.error({ err, seq: msg.seq }, 'stored-event handler failed; it will be delivered again');
        msg.nak(1000);
      }
    }
  })();
  return {
    async stop() {
      await messages.close();
      await loop;
    },
  };
}
