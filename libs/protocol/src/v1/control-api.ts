import Type, { type Static } from 'typebox';
import { DecisionSchema, DecisionScopeSchema } from './events.js';
import { storedEventSchemaOf } from './envelope.js';
import { EventCursorQuery, ListResponse } from './lists.js';
import { JsonObject } from './primitives.js';

/** Longest a pending-decision long poll may wait, in milliseconds. */
export const MAX_PENDING_WAIT_MS = 30_000;

/** `POST /v1/workers/{id}/control`: a person's decision on one `control_request`. */
export const PostControlBody = Type.Object(
  {
    request_id: Type.String({ minLength: 1, maxLength: 256 }),
    decision: DecisionSchema,
    message: Type.Optional(Type.String({ maxLength: 65_536, description: 'The reason the agent receives; a deny without one gets a default.' })),
    updated_input: Type.Optional(JsonObject),
    scope: Type.Optional(DecisionScopeSchema),
  },
  { additionalProperties: false },
);
export type PostControlBodyType = Static<typeof PostControlBody>;

/** `201`: the stored `control_response` event. */
export const PostControlResponse = storedEventSchemaOf('control_response');

/** `GET /v1/workers/{id}/control/pending?after_id=&wait_ms=`: decisions after the cursor. */
export const PendingControlQuery = Type.Object({
  ...EventCursorQuery.properties,
  wait_ms: Type.Integer({ minimum: 0, maximum: MAX_PENDING_WAIT_MS, default: 0, description: `Long-poll up to this many ms (0-${MAX_PENDING_WAIT_MS}) for a decision.` }),
});

export const PendingControlResponse = ListResponse(storedEventSchemaOf('control_response'));

export const CONTROL_REQUEST_STATES = ['open', 'closed', 'all'] as const;

/** `GET /v1/workers/{id}/control/requests?state=open`: requests for late joiners. */
export const ControlRequestsQuery = Type.Object({
  state: Type.Enum(CONTROL_REQUEST_STATES, { default: 'open' }),
});

export const ControlRequestsResponse = ListResponse(storedEventSchemaOf('control_request'));
