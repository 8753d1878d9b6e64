import { randomBytes } from 'node:crypto';
import { incomingMessageId, partitionOfWorker, subjects, type EventSource, type IncomingEvent } from '@svc/protocol';
import { counter, histogram, type Context } from '@svc/service-kit';
import type { DurablePublisher } from './durable-publisher.js';

/** How the gateway gathers concurrent POSTs' events into JetStream messages (docs/event-ingest.md, "Coalescing"). */
export interface CoalescingSettings {
  /** The longest an event waits for company, ms; 0: each POST is its own message. */
  windowMs: number;
  /** Most events in one message. */
  maxEvents: number;
  /** Most bytes in one message (kept below the server's `max_payload`). */
  maxBytes: number;
}

export interface EventCoalescer {
  /**
   * Hands a POST's events (one worker's, in order) to event-ingest and resolves once every
   * message holding them is durable. Events of POSTs arriving meanwhile for the same partition
   * share those messages; a POST's events are never reordered, and later POSTs' events follow them.
   * `sourceOf` says who wrote each event (the caller knows the principal: docs/protocol.md, "Sources").
   */
  publish(
    workerId: string,
    events: readonly IncomingEvent[],
    options: { requestId?: string; receivedAt: string; trace?: Context | undefined; sourceOf: (event: IncomingEvent) => EventSource },
  ): Promise<void>;
}

// Events per message = svc_events_accepted_total / svc_incoming_messages_total (coalescing).
const messagesSent = counter({
  name: 'svc_incoming_messages_total',
  help: 'JetStream messages the gateway published to event-ingest (coalescing: concurrent POSTs share a message).',
});
const messageBytes = histogram({
  name: 'svc_incoming_message_bytes',
  help: 'The size of the JetStream messages the gateway published to event-ingest.',
  buckets: [512, 2048, 8192, 32_768, 131_072, 524_288, 1_048_576],
});

/** One partition's message being gathered. */
interface Gathering {
  partition: number;
  /** Each event's `IncomingEventMessage`, already JSON. */
  entries: Array<{ workerId: string; uid: string; json: string }>;
  bytes: number;
  requestId: string | undefined;
  /** The first traced POST's context: the message continues its trace (the others end at the gateway). */
  trace: Context | undefined;
  timer: NodeJS.Timeout | undefined;
  done: Promise<void>;
  settle: (err?: unknown) => void;
}

const BATCH_OPEN = '{"events":[';
const BATCH_CLOSE = ']}';
const encoder = new TextEncoder();

/**
 * Coalescing at the gateway: events bound for the same partition are gathered and published
 * as one message. A gathering is sent when nothing of its partition is waiting for JetStream
 * (at the end of the event-loop turn: an idle gateway adds no delay), when the window passes,
 * or when it is full; while a message is in flight the next one fills, so under load a message
 * carries everything that arrived during the previous one's round trip.
 */
export function createEventCoalescer(publisher: DurablePublisher, settings: CoalescingSettings): EventCoalescer {
  const open = new Map<number, Gathering>();
  const inFlight = new Map<number, number>();
  // Message ids of gathered messages: unique (a POST sent again lands in another message; the
  // store's uid constraint is what stores each event once).
  const idPrefix = `batch:${randomBytes(6).toString('hex')}:`;
  let sent = 0;

  function gatheringFor(partition: number): Gathering {
    let settle!: (err?: unknown) => void;
    const done = new Promise<void>((resolve, reject) => (settle = (err) => (err === undefined ? resolve() : reject(err))));
    // A message of which nobody waits for the answer any more must not be an unhandled rejection.
    done.catch(() => {});
    const gathering: Gathering = {
      partition,
      entries: [],
      bytes: BATCH_OPEN.length + BATCH_CLOSE.length,
      requestId: undefined,
      trace: undefined,
      timer: undefined,
      done,
      settle,
    };
    open.set(partition, gathering);
    // Window 0: the POST sends it itself. Nothing of this partition on its way: it goes at the end
    // of this turn (with whatever else this turn's requests bring). Otherwise it waits for the one
    // in flight (`send` sends it after that one's ack), at most the window.
    if (settings.windowMs === 0) return gathering;
    if (!inFlight.has(partition)) setImmediate(() => send(gathering));
    else gathering.timer = setTimeout(() => send(gathering), settings.windowMs);
    return gathering;
  }

  function send(gathering: Gathering): void {
    if (open.get(gathering.partition) !== gathering) return; // sent already
    open.delete(gathering.partition);
    clearTimeout(gathering.timer);
    const { partition, entries } = gathering;
    const only = entries.length === 1 ? entries[0]! : undefined;
    // One event alone goes in its own form, with its uid as the message id (JetStream drops a
    // repeat within its window before the store has to).
    const [subject, payload, messageId] = only
      ? [subjects.incomingEvent(partition, only.workerId), only.json, incomingMessageId(only.workerId, only.uid)]
      : [subjects.incomingBatch(partition), BATCH_OPEN + entries.map((entry) => entry.json).join(',') + BATCH_CLOSE, idPrefix + sent++];
    inFlight.set(partition, (inFlight.get(partition) ?? 0) + 1);
    const data = encoder.encode(payload);
    messagesSent.inc();
    messageBytes.observe(data.length);
    publisher
      .publish(subject, data, { messageId, requestId: gathering.requestId, trace: gathering.trace })
      .then(
        () => gathering.settle(),
        (err: unknown) => gathering.settle(err),
      )
      .finally(() => {
        const left = inFlight.get(partition)! - 1;
        if (left > 0) inFlight.set(partition, left);
        else {
          inFlight.delete(partition);
          // The partition's line is free: what gathered meanwhile goes now.
          const next = open.get(partition);
          if (next) send(next);
        }
      });
  }

  return {
    publish(workerId, events, { requestId, receivedAt, trace, sourceOf }) {
      const partition = partitionOfWorker(workerId);
      const waits: Array<Promise<void>> = [];
      let gathering = open.get(partition);
      for (const event of events) {
        const json = JSON.stringify({ worker_id: workerId, event, received_at: receivedAt, source: sourceOf(event) });
        const bytes = Buffer.byteLength(json) + 1;
        if (gathering && (gathering.entries.length >= settings.maxEvents || gathering.bytes + bytes > settings.maxBytes)) {
          send(gathering);
          gathering = undefined;
        }
        gathering ??= gatheringFor(partition);
        gathering.entries.push({ workerId, uid: event.uid, json });
        gathering.bytes += bytes;
        gathering.requestId ??= requestId;
        gathering.trace ??= trace;
        if (waits.at(-1) !== gathering.done) waits.push(gathering.done);
      }
      // Window 0: no waiting for other POSTs at all, this POST is its own message (or several).
      if (settings.windowMs === 0 && gathering) send(gathering);
      return Promise.all(waits).then(() => undefined);
    },
  };
}
