import { incomingMessageId, partitionOfWorker, subjects, type EventSource, type IncomingEvent, type IncomingEventMessageType } from '@svc/protocol';
import { createDurablePublisher, type DurableAck } from './durable-publisher.js';
import type { NatsConnection } from './connection.js';
import type { SendOptions } from './messaging.js';

export interface IncomingEventPublisher {
  /**
   * Hands an incoming event to event-ingest (JetStream `SVC_EVENTS_INCOMING`, the worker's
   * partition) and resolves once it is durable. The same uid again is dropped by JetStream within
   * its window and stored once by the store in any case. Its source is the publisher's, unless
   * `source` says otherwise.
   */
  publish(workerId: string, event: IncomingEvent, options?: SendOptions & { receivedAt?: string; source?: EventSource }): Promise<DurableAck>;
  close(): void;
}

/**
 * The one way onto the incoming-event stream (the gateway and the session service use it). `source` is who writes through it (a control-plane component, say): every event it
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
    close: () => publisher.close(),
  };
}
