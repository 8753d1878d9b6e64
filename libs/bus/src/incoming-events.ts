import {
  incomingMessageId,
  partitionOfWorker,
  subjects,
  type EventSource,
  type IncomingEvent,
  type IncomingEventMessageType,
  type StoredElsewhereMessageType,
  type StoredEvent,
} from '@svc/protocol';
import { createDurablePublisher, type DurableAck } from './durable-publisher.js';
import type { NatsConnection } from './connection.js';
import { requestJson, type SendOptions } from './messaging.js';

/**
 * How long the owner of the worker's partition has to confirm an announcement handed to it
 * before the hand-over goes the durable way (it is announced at once, or it is down).
 */
const HAND_OVER_ANSWER_MS = 2000;

export interface IncomingEventPublisher {
  /**
   * Hands an incoming event to event-ingest (JetStream `SVC_EVENTS_INCOMING`, the worker's
   * partition) and resolves once it is durable. The same uid again is dropped by JetStream within
   * its window and stored once by the store in any case. Its source is the publisher's, unless
   * `source` says otherwise.
   */
  publish(workerId: string, event: IncomingEvent, options?: SendOptions & { receivedAt?: string; source?: EventSource }): Promise<DurableAck>;
  /**
   * An event another service stored itself (a decision): event-ingest announces it in the
   * worker's order. It goes to the replica owning the worker's partition over core NATS, which
   * announces it before answering (one hop, nothing written to JetStream on the way); if that
   * replica does not answer in time, it goes durably on the worker's incoming partition, where
   * event-ingest finds it when it is back. Resolves once announced or durable.
   */
  handOverStored(workerId: string, event: StoredEvent): Promise<void>;
  close(): void;
}

/**
 * The one way onto the incoming-event stream (the gateway, the session and control services use
 * it). `source` is who writes through it (a control-plane component, say): every event it
 * publishes is stored with that source (docs/protocol.md, "Sources").
 */
export function createIncomingEventPublisher(nc: NatsConnection, source: EventSource): IncomingEventPublisher {
  const publisher = createDurablePublisher(nc);
  const subjectOf = (workerId: string) => subjects.incomingEvent(partitionOfWorker(workerId), workerId);
  return {
    publish(workerId, event, options = {}) {
      const message: IncomingEventMessageType = {
        worker_id: workerId,
        event,
        received_at: options.receivedAt ?? new Date().toISOString(),
        source: options.source ?? source,
      };
      return publisher.publish(subjectOf(workerId), message, {
        messageId: incomingMessageId(workerId, event.uid),
        requestId: options.requestId,
        trace: options.trace,
      });
    },
    async handOverStored(workerId, event) {
      const message: StoredElsewhereMessageType = { worker_id: workerId, stored: event };
      try {
        await requestJson(nc, subjects.storedElsewhere(partitionOfWorker(workerId)), message, { timeoutMs: HAND_OVER_ANSWER_MS });
      } catch {
        // `immediate`: a decision's announcement is on the path of the agent's next step.
        await publisher.publish(subjectOf(workerId), message, { messageId: incomingMessageId(workerId, event.uid), immediate: true });
      }
    },
    close: () => publisher.close(),
  };
}
