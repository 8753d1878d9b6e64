import { AckPolicy, DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { decodeJson, publishJson, type DurablePublisher, type NatsConnection } from '@svc/bus';
import { agentExitCodeOf, isControlEvent, storedBatchMessageId, streams, subjects, validateIncomingEvent, type IncomingEvent, type IncomingEventMessageType, type StoredEvent, type StoredEventBatchType } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import { isStoreUnavailable, type WorkerEvents } from '@svc/store';
import type { Appender } from './shared-commits.js';

/** Most messages appended in one go (per partition). */
const MAX_BATCH = 500;
/**
 * How long a message may stay unacknowledged before JetStream delivers it again: after a replica
 * dies, its unacknowledged messages wait this long. Messages being stored are kept alive with
 * `working()` however long the store takes, so this is about crashes, not slow commits.
 */
const ACK_WAIT_MS = 10_000;
/** The longest pause between two tries of a failed append. */
const APPEND_RETRY_MAX_MS = 1000;
/** Messages taken from JetStream but not yet stored; past this the consumer stops pulling. */
const MAX_BUFFERED = 2 * MAX_BATCH;

export interface PartitionConsumer {
  stop(): Promise<void>;
}

function isConsumerNotFound(err: unknown): boolean {
  return err instanceof JetStreamApiError && err.code === JetStreamApiCodes.ConsumerNotFound;
}

/** The durable consumer of one partition: its name is stable so a restarted replica resumes it. */
export function consumerName(partition: number): string {
  return `event-ingest-p${partition}`;
}

/**
 * Consumes one partition of incoming events in order: appends them in batches (per worker, in
 * the order received), announces each worker's stored events on `svc.events.stored.<worker>`
 * (one `StoredEventBatch` per commit), then acknowledges them. A failed append is retried (the messages stay unacknowledged
 * and in order) until it succeeds; nothing is acknowledged before it is stored.
 */
export async function consumePartition(nc: NatsConnection, store: Appender, announcer: DurablePublisher, partition: number, logger: Logger): Promise<PartitionConsumer> {
  const log = logger.child({ partition });
  const jsm = await jetstreamManager(nc);
  const name = consumerName(partition);
  // A restarted replica must get its partition's unacknowledged messages first and in order. The
  // consumer a dead process left behind would hold those back until their ack deadline and hand
  // out newer ones meanwhile, which breaks per-worker order. On a work-queue stream the messages
  // still there are exactly those not yet stored, so a fresh consumer delivers them in stream
  // order. (Only one replica owns a partition at a time: docs/event-ingest.md.)
  await jsm.consumers.delete(streams.incomingEvents.name, name).catch((err: unknown) => {
    if (!isConsumerNotFound(err)) throw err;
  });
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

  // Acknowledgements of a stored and announced batch wait for the next batch's announcement and
  // leave in the same socket write (the second write per batch was about a tenth of event-ingest's
  // CPU); they go at once when the partition falls idle or the store fails.
  let unsentAcks: JsMsg[] = [];
  function sendAcks(): void {
    const acks = unsentAcks;
    unsentAcks = [];
    for (const msg of acks) msg.ack();
  }

  async function appendWithRetry(batches: WorkerEvents[]): Promise<StoredEvent[][]> {
    for (let attempt = 0; ; attempt++) {
      try {
        // Events already stored are announced again: a replica that crashed between commit and
        // announcement left them unannounced, and the redelivery is the only chance to make up
        // for it. Subscribers skip ids they have.
        return (await store.appendMany(batches)).map((results) => results.map((r) => r.event));
      } catch (err) {
        sendAcks();
        if (stopping) throw err;
        // Postgres away (restarting, failing over) is waited out; the pause stays short so
        // storage resumes within about a second of the database coming back.
        if (isStoreUnavailable(err)) log.warn({ err: { message: (err as Error).message }, workers: batches.length, attempt }, 'the store is unavailable; retrying the batch');
        else log.error({ err, workers: batches.length, attempt }, 'append failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(APPEND_RETRY_MAX_MS, 50 * 2 ** attempt)));
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
    // Every worker of the batch in one transaction: one commit, however many workers. While it
    // runs (a store outage can make that minutes), JetStream is told the batch is in hand.
    const groups = [...byWorker];
    const inHand = setInterval(() => batch.forEach((msg) => msg.working()), ACK_WAIT_MS / 3);
    try {
      const stored = await appendWithRetry(groups.map(([workerId, group]) => ({ workerId, events: group.events })));
      sendAcks();
      await Promise.all(
        groups.map(async ([workerId, group], index) => {
          // Announced before acknowledged: a crash in between redelivers the messages, and the
          // announcements are made again (acknowledging first could lose them for good).
          const announcement: StoredEventBatchType = { worker_id: workerId, events: stored[index]! };
          const exits = announcement.events.filter((event) => agentExitCodeOf(event) !== undefined);
          const lifecycle: StoredEventBatchType = { worker_id: workerId, events: exits };
          await Promise.all([
            announcer.publish(subjects.storedEvent(workerId), announcement, { messageId: storedBatchMessageId(announcement), immediate: true }),
            exits.length > 0 ? announcer.publish(subjects.lifecycleEvent(workerId), lifecycle, { messageId: storedBatchMessageId(lifecycle), immediate: true }) : undefined,
          ]);
          const control = announcement.events.filter(isControlEvent);
          if (control.length > 0) publishJson(nc, subjects.controlEvents(workerId), { worker_id: workerId, events: control } satisfies StoredEventBatchType);
          unsentAcks.push(...group.msgs);
        }),
      );
    } finally {
      clearInterval(inHand);
    }
  }

  let bufferHasRoom: (() => void) | undefined;
  function kick(): void {
    if (draining) return;
    draining = (async () => {
      // Let the rest of this turn's messages (one socket read brings many) join the first batch.
      await new Promise((resolve) => setImmediate(resolve));
      while (buffer.length > 0 && !stopping) {
        const batch = buffer.splice(0, MAX_BATCH);
        bufferHasRoom?.();
        await processBatch(batch);
      }
    })()
      .catch((err: unknown) => log.error({ err }, 'partition processing stopped'))
      .finally(() => {
        sendAcks();
        draining = undefined;
        if (buffer.length > 0 && !stopping) kick();
      });
  }

  const loop = (async () => {
    for await (const msg of messages) {
      buffer.push(msg);
      kick();
      // Back-pressure: while the store is slow (or down), stop pulling rather than pile up
      // messages whose ack deadline would pass before they are stored.
      if (buffer.length >= MAX_BUFFERED) await new Promise<void>((resolve) => (bufferHasRoom = resolve));
    }
  })();

  return {
    async stop() {
      // The batch being stored finishes (or, failing, is left unacknowledged for redelivery);
      // nothing new is taken.
      stopping = true;
      bufferHasRoom?.();
      await messages.close();
      await loop.catch(() => {});
      await draining;
    },
  };
}
