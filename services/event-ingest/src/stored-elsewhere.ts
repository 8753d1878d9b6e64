import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import { CodedError, createChecker, partitionOfWorker, StoredElsewhereMessage, subjects, type StoredElsewhereMessageType } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { Announcer } from './announcer.js';

/**
 * Announces the events another service stored itself for a worker of `partition` (the control
 * service's decisions, `handOverStored`), answering once the announcement is made. This is the
 * quick way: a decision is on the path of the agent's next step, and going through JetStream
 * would add a write, a pull and an acknowledgement. Only the control service may publish here
 * (`libs/bus/src/nats-auth.ts`), so what it says is stored is taken as stored.
 */
export function serveStoredElsewhere(nc: NatsConnection, announcer: Announcer, partition: number, logger: Logger): Subscription {
  return serveRpc<StoredElsewhereMessageType, Record<string, never>>(
    nc,
    subjects.storedElsewhere(partition),
    async ({ worker_id: workerId, stored }) => {
      if (partitionOfWorker(workerId) !== partition || stored.worker_id !== workerId)
        throw new CodedError('invalid_request', `worker ${workerId} is not of partition ${partition}, or the event is not the worker's`);
      await announcer.announce(workerId, [stored]);
      return {};
    },
    { logger, queue: 'event-ingest', checker: createChecker(StoredElsewhereMessage) },
  );
}
