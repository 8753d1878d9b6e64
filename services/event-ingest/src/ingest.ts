import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { decodeJson, publishDurable, type NatsConnection } from '@svc/bus';
import { streams, subjects, validateIncomingEvent, type IncomingEvent, type IncomingEventMessageType, type StoredEvent } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { EventStore } from '@svc/store';

/** Most messages appended in one go (per partition). */
const MAX_BATCH = 500;
/** How long a message may stay unacknowledged before JetStream delivers it again. */
const ACK_WAIT_MS = 60_000;

export interface PartitionConsumer {
  stop(): Promise<void>;
}

/** The durable consumer of one partition: its name is stable so a restarted replica resumes it. */
export function consumerName(partition: number): string {
  return `event-ingest-p${partition}`;
}

/**
 * Consumes one partition of incoming events in order: appends them in batches (per worker, in
 * the order received), acknowledges after commit, then announces the newly stored events on
 * `svc.events.stored.<worker>`. A failed append is retried (the messages stay unacknowledged
 * and in order) until it succeeds; nothing is acknowledged before it is stored.
 */
export async function consumePartition(nc: NatsConnection, store: EventStore, partition: number, logger: Logger): Promise<PartitionConsumer> {
  const log = logger.child({ partition });
  const jsm = await jetstreamManager(nc);
  const name = consumerName(partition);
  await jsm.consumers.add(streams.incomingEvents.name, {
    durable_name: name,
    filter_subject: subjects.incomingPartition(partition),
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(ACK_WAIT_MS),
    max_ack_pending: 20_000,
  });
  const js = jetstream(nc);
  const consumer = await js.consumers.get(streams.incomingEvents.name, name);
  const messages = await consumer.consume({ max_messages: 1000 });

  const buffer: JsMsg[] = [];
  let draining: Promise<void> | undefined;
  let stopping = false;

  async function appendWithRetry(workerId: string, events: IncomingEvent[], held: JsMsg[]): Promise<StoredEvent[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        const results = await store.append(workerId, events);
        return results.filter((r) => !r.duplicate).map((r) => r.event);
      } catch (err) {
        if (stopping) throw err;
        log.error({ err, workerId, attempt }, 'append failed; retrying');
        for (const msg of held) msg.working();
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 100 * 2 ** attempt)));
      }
    }
  }

  async function processBatch(batch: JsMsg[]): Promise<void> {
    const byWorker = new Map<string, { events: IncomingEvent[]; msgs: JsMsg[] }>();
    for (const msg of batch) {
      let payload: IncomingEventMessageType;
      try {
        payload = decodeJson<IncomingEventMessageType>(msg);
      } catch {
        log.error({ seq: msg.seq }, 'dropping an incoming message that is not JSON');
        msg.term('not JSON');
        continue;
      }
      const checked = validateIncomingEvent(payload.event);
      if (!checked.ok) {
        log.error({ seq: msg.seq, worker: payload.worker_id }, 'dropping an incoming event that fails the protocol');
        msg.term('invalid event');
        continue;
      }
      const group = byWorker.get(payload.worker_id) ?? { events: [], msgs: [] };
      group.events.push(checked.value);
      group.msgs.push(msg);
      byWorker.set(payload.worker_id, group);
    }
    // Workers are independent: their appends run side by side; each keeps its own order.
    await Promise.all(
      [...byWorker].map(async ([workerId, group]) => {
        const stored = await appendWithRetry(workerId, group.events, group.msgs);
        for (const msg of group.msgs) msg.ack();
        await Promise.all(stored.map((event) => publishDurable(js, subjects.storedEvent(workerId), event, { messageId: `${workerId}:${event.id}` })));
      }),
    );
  }

  function kick(): void {
    if (draining) return;
    draining = (async () => {
      while (buffer.length > 0 && !stopping) await processBatch(buffer.splice(0, MAX_BATCH));
    })()
      .catch((err: unknown) => log.error({ err }, 'partition processing stopped'))
      .finally(() => {
        draining = undefined;
        if (buffer.length > 0 && !stopping) kick();
      });
  }

  const loop = (async () => {
    for await (const msg of messages) {
      buffer.push(msg);
      kick();
    }
  })();

  return {
    async stop() {
      // The batch being stored finishes (or, failing, is left unacknowledged for redelivery);
      // nothing new is taken.
      stopping = true;
      await messages.close();
      await loop.catch(() => {});
      await draining;
    },
  };
}
