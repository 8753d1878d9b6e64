import Type from 'typebox';
import { IncomingEventSchema, StoredEventSchema } from './envelope.js';
import { EventBeforeId, EventCursorQuery, EventTypesFilter, ListResponse } from './lists.js';
import { WorkerId } from './primitives.js';

/** Most events one `POST …/sdk-events` may carry. */
export const MAX_EVENTS_PER_POST = 500;

export const WorkerParams = Type.Object({ id: WorkerId });

/** `POST /v1/workers/{id}/sdk-events`: one event, or a batch `{events: […]}`. */
export const PostSdkEventsBody = Type.Union([
  IncomingEventSchema,
  Type.Object({ events: Type.Array(IncomingEventSchema, { minItems: 1, maxItems: MAX_EVENTS_PER_POST }) }, { additionalProperties: false }),
]);

/** `202`: every event is durable (acknowledged by JetStream). */
export const PostSdkEventsResponse = Type.Object(
  { accepted: Type.Integer({ minimum: 0, description: 'How many events were accepted.' }) },
  { additionalProperties: false },
);

/** `GET /v1/workers/{id}/sdk-events?after_id=&before_id=&limit=&types=`. */
export const ListSdkEventsQuery = Type.Object({
  ...EventCursorQuery.properties,
  before_id: Type.Optional(EventBeforeId),
  types: Type.Optional(EventTypesFilter),
});

export const ListSdkEventsResponse = ListResponse(StoredEventSchema);

/** `WS /v1/workers/{id}/sdk-events/stream?after_id=`. */
export const StreamSdkEventsQuery = Type.Object({ after_id: Type.Optional(EventCursorQuery.properties.after_id) });
