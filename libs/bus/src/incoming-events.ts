import {
  incomingMessageId,
  partitionOfWorker,
  subjects,
  type IncomingEvent,
  type IncomingEventMessageType,
  type StoredElsewhereMessageType,
  type StoredEvent,
} from '@svc/protocol';
import { createDurablePublisher, type DurableAck } from './durable-publisher.js';
import type { NatsConnection } from './connection.js';

export interface IncomingEventPublisher {
  /**
   * Hands an incoming event to event-ingest (JetStream `SVC_EVENTS_INCOMING`, the worker's
   * partition) and resolves once it is durable. The same uid again is dropped by JetStream within
   * its window and stored once by the store in any case.
   */
  publish(workerId: string, event: IncomingEvent, options?: { requestId?: string | undefined; receivedAt?: string }): Promise<DurableAck>;
  /** An event another service stored itself (a decision): event-ingest announces it in order. */
  publishStored(workerId: string, event: StoredEvent): Promise<DurableAck>;
  close(): void;
}

/** The one way onto the incoming-event stream (the gateway, the session and control services use it). */
export function createIncomingEventPublisher(nc: NatsConnection): IncomingEventPublisher {
  const publisher = createDurablePublisher(nc);
  const subjectOf = (workerId: string) => subjects.incomingEvent(partitionOfWorker(workerId), workerId);
  return {
    publish(workerId, event, options = {}) {
      const message: IncomingEventMessageType = { worker_id: workerId, event, received_at: options.receivedAt ?? new Date().toISOString() };
      return publisher.publish(subjectOf(workerId), message, { messageId: incomingMessageId(workerId, event.uid), requestId: options.requestId });
    },
    publishStored(workerId, event) {
      const message: StoredElsewhereMessageType = { worker_id: workerId, stored: event };
      // `immediate`: a decision's announcement is on the path of the agent's next step.
      return publisher.publish(subjectOf(workerId), message, { messageId: incomingMessageId(workerId, event.uid), immediate: true });
    },
    close: () => publisher.close(),
  };
}
