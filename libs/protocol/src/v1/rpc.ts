import Type, { type Static } from 'typebox';
import { EVENT_TYPES } from './events.js';
import { StoredEventSchema } from './envelope.js';
import { EVENT_LIST_LIMIT } from './lists.js';
import { EventId, Timestamp, WorkerId } from './primitives.js';
import { DecisionPolicySchema, WorkerStatusSchema } from './sessions-api.js';

/** What the gateway publishes to `svc.events.incoming.<partition>.<worker>` for each event. */
export const IncomingEventMessage = Type.Object(
  { worker_id: WorkerId, event: Type.Unknown({ description: 'An incoming event, validated by the gateway.' }), received_at: Timestamp },
  { additionalProperties: false },
);
export type IncomingEventMessageType = Static<typeof IncomingEventMessage>;

/**
 * What `svc.events.stored.<worker>` carries: the events of one worker that one commit stored,
 * in id order (one message per commit, not per event: a busy worker's events cost one bus
 * message per batch). Its JetStream message id is `storedBatchMessageId`. A batch may repeat
 * events already announced (after a crash between commit and acknowledgement): subscribers go
 * by `id` and skip what they have.
 */
export const StoredEventBatch = Type.Object({ worker_id: WorkerId, events: Type.Array(StoredEventSchema, { minItems: 1 }) }, { additionalProperties: false });
export type StoredEventBatchType = Static<typeof StoredEventBatch>;

/** The JetStream message id of a stored-event batch: `<worker>:<first id>-<last id>`. */
export function storedBatchMessageId(batch: StoredEventBatchType): string {
  return `${batch.worker_id}:${batch.events[0]!.id}-${batch.events.at(-1)!.id}`;
}

/** `svc.rpc.events.list`: a page of a worker's stored events. */
export const ListEventsRequest = Type.Object(
  {
    worker_id: WorkerId,
    after_id: EventId,
    limit: Type.Integer({ minimum: 1, maximum: EVENT_LIST_LIMIT.max }),
    types: Type.Optional(Type.Array(Type.Enum(EVENT_TYPES))),
  },
  { additionalProperties: false },
);
export type ListEventsRequestType = Static<typeof ListEventsRequest>;

export const ListEventsResult = Type.Object({ items: Type.Array(StoredEventSchema), total: Type.Integer({ minimum: 0 }) });

/** `svc.rpc.session.worker.create`: register a worker and make its token (the token is returned once). */
export const CreateWorkerRequest = Type.Object(
  { owner: Type.String({ minLength: 1, maxLength: 256 }), worker_id: Type.Optional(WorkerId), decision_policy: Type.Optional(DecisionPolicySchema) },
  { additionalProperties: false },
);
export type CreateWorkerRequestType = Static<typeof CreateWorkerRequest>;
export const CreateWorkerResult = Type.Object({ worker_id: WorkerId, token: Type.String() });
export type CreateWorkerResultType = Static<typeof CreateWorkerResult>;

/** `svc.rpc.session.worker.status`: move a worker to another status. */
export const SetWorkerStatusRequest = Type.Object({ worker_id: WorkerId, status: WorkerStatusSchema }, { additionalProperties: false });
export type SetWorkerStatusRequestType = Static<typeof SetWorkerStatusRequest>;

/** `svc.rpc.session.worker.get`. */
export const GetWorkerRequest = Type.Object({ worker_id: WorkerId }, { additionalProperties: false });
