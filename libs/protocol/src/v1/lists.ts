import Type, { type TSchema } from 'typebox';
import { EventId } from './primitives.js';
import { EVENT_TYPES } from './events.js';

/** Page size of offset-paginated lists (sessions, …): default and maximum. */
export const LIST_LIMIT = { default: 50, max: 500 } as const;
/** Page size of event lists (cursor-paginated, larger because replay reads many): default and maximum. */
export const EVENT_LIST_LIMIT = { default: 100, max: 1000 } as const;

/** `ListResponse<T>`: one page of items and the total number of matching items. */
export function ListResponse<T extends TSchema>(item: T) {
  return Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer({ minimum: 0, description: 'How many items match the query in all (see docs/api.md for event lists).' }),
    },
    { additionalProperties: false },
  );
}

export type ListResponseOf<T> = { items: T[]; total: number };

/** The `limit`/`offset` query of every offset-paginated list. */
export const PaginationQuery = Type.Object({
  limit: Type.Integer({
    minimum: 1,
    maximum: LIST_LIMIT.max,
    default: LIST_LIMIT.default,
    description: `Page size, 1-${LIST_LIMIT.max} (default ${LIST_LIMIT.default}).`,
  }),
  offset: Type.Integer({ minimum: 0, default: 0, description: 'How many matching items to skip.' }),
});

/** The cursor query of every event list: events with id greater than `after_id`, in id order. */
export const EventCursorQuery = Type.Object({
  after_id: Type.Optional(EventId),
  limit: Type.Integer({
    minimum: 1,
    maximum: EVENT_LIST_LIMIT.max,
    default: EVENT_LIST_LIMIT.default,
    description: `Page size, 1-${EVENT_LIST_LIMIT.max} (default ${EVENT_LIST_LIMIT.default}).`,
  }),
});

/**
 * `before_id`: the page is the `limit` events just before it (the newest of them), still in id
 * order; `end` stands after the newest event, so `before_id=end` reads a worker's last page.
 */
export const EventBeforeId = Type.Union([EventId, Type.Literal('end')], {
  description: 'Events with an id smaller than this ("end": the newest events); the page is the `limit` events just before it, in id order.',
  examples: ['1000', 'end'],
});

const eventTypeAlternatives = EVENT_TYPES.join('|');

/** `types=tool_use,result`: a comma-separated filter on event types. */
export const EventTypesFilter = Type.String({
  pattern: `^(${eventTypeAlternatives})(,(${eventTypeAlternatives}))*$`,
  description: 'Comma-separated event types to keep, e.g. "tool_use,tool_result".',
});
