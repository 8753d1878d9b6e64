import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerMessages } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { streams, subjects } from '@svc/protocol';
import type { NatsConnection } from './connection.js';

/**
 * How long a notification in hand may go unacknowledged before JetStream hands it to another
 * control replica: longer than one delivery try may take (`DELIVERY_TIMEOUT_MS` in control), and
 * what a notification in the hands of a killed replica waits.
 */
export const WEBHOOK_ACK_WAIT_MS = 30_000;

const QUEUES = {
  /** Facts to fan out to the subscriptions, one at a time per replica (each is a few inserts). */
  facts: { durable: 'control-webhook-facts', filter: subjects.webhookFacts, maxAckPending: 64 },
  /** Deliveries, many at once: each waits for a receiver that may be slow. */
  deliveries: { durable: 'control-webhook-deliveries', filter: subjects.webhookDeliveriesAll, maxAckPending: 1024 },
} as const;

/**
 * The durable queue of `SVC_WEBHOOKS` that the control replicas share (docs/webhooks.md): each
 * message goes to one of them and stays until acknowledged; a message not acknowledged in time
 * (its replica died) is handed out again. Retries are `nak(delay)`s.
 */
export async function consumeWebhookQueue(nc: NatsConnection, queue: keyof typeof QUEUES): Promise<ConsumerMessages> {
  const { durable, filter, maxAckPending } = QUEUES[queue];
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(streams.webhooks.name, {
    durable_name: durable,
    filter_subject: filter,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(WEBHOOK_ACK_WAIT_MS),
    max_ack_pending: maxAckPending,
    max_deliver: -1,
  });
  const consumer = await jetstream(nc).consumers.get(streams.webhooks.name, durable);
  // Gone (a cluster's server lost with it): the messages end with an error, and the caller makes it again (consumeLasting).
  return consumer.consume({ max_messages: Math.min(maxAckPending, 256), abort_on_missing_resource: true });
}
