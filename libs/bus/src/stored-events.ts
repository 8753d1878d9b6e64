import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { streams, subjects, type StoredEvent } from '@svc/protocol';
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
  /** Where a new durable starts: every event the stream still keeps, or only new ones. */
  from?: 'all' | 'new';
  /** Called once per stored event, in order per worker; the event is acknowledged when it resolves. */
  handler: (event: StoredEvent) => Promise<void> | void;
  logger: Logger;
}

/**
 * How an internal service follows stored events durably (docs/bus.md): a JetStream durable
 * consumer on `SVC_EVENTS_STORED`. An event whose handler fails is delivered again after a
 * pause; the stream keeps events for 24 hours (or 1 GiB), so a subscriber down for less misses nothing.
 */
export async function subscribeStoredEvents(nc: NatsConnection, options: StoredEventSubscriberOptions): Promise<StoredEventSubscription> {
  const log = options.logger.child({ component: 'stored-events', durable: options.durableName });
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(streams.storedEvents.name, {
    durable_name: options.durableName,
    filter_subject: options.workerId ? subjects.storedEvent(options.workerId) : subjects.storedAll,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: options.from === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
    ack_wait: nanos(30_000),
    // One event in flight at a time keeps each worker's order through redeliveries.
    max_ack_pending: 1,
  });
  const consumer = await jetstream(nc).consumers.get(streams.storedEvents.name, options.durableName);
  const messages = await consumer.consume({ max_messages: 100 });
  const loop = (async () => {
    for await (const msg of messages) {
      try {
        await options.handler(msg.json<StoredEvent>());
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
