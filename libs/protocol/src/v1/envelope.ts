import Type, { type TSchema } from 'typebox';
import { EVENT_DATA_SCHEMAS, EVENT_TYPES, EventTypeSchema, type EventDataMap, type EventType } from './events.js';
import { EventId, EventUid, Timestamp, WorkerId } from './primitives.js';
import { EventSourceSchema, type EventSource } from './provenance.js';

function incomingOf<K extends EventType>(type: K) {
  return Type.Object(
    {
      type: Type.Literal(type),
      uid: EventUid,
      ts: Timestamp,
      data: EVENT_DATA_SCHEMAS[type] as (typeof EVENT_DATA_SCHEMAS)[K],
    },
    { additionalProperties: false, title: `incoming_${type}` },
  );
}

function storedOf<K extends EventType>(type: K) {
  return Type.Object(
    {
      id: EventId,
      worker_id: WorkerId,
      type: Type.Literal(type),
      uid: EventUid,
      ts: Timestamp,
      data: EVENT_DATA_SCHEMAS[type] as (typeof EVENT_DATA_SCHEMAS)[K],
      source: EventSourceSchema,
    },
    { additionalProperties: false, title: `stored_${type}` },
  );
}

/** An event as a producer sends it: `{type, uid, ts, data}` (one schema per type, for docs). */
export const IncomingEventSchema = Type.Unsafe<IncomingEvent>(
  Type.Union(EVENT_TYPES.map(incomingOf), { description: 'An SDK event as the producer sends it.' }),
);

/** A stored event: `{id, worker_id, type, uid, ts, data, source}`, with `id` the per-worker cursor and `source` who wrote it. */
export const StoredEventSchema = Type.Unsafe<StoredEvent>(
  Type.Union(EVENT_TYPES.map(storedOf), { description: 'An SDK event as stored, with its per-worker cursor `id`.' }),
);

/** The loose outer shape of an incoming event, checked before its `data` (gives precise errors). */
export const IncomingEnvelopeSchema = Type.Object(
  { type: EventTypeSchema, uid: EventUid, ts: Timestamp, data: Type.Object({}) },
  { additionalProperties: false },
);

export type IncomingEvent<K extends EventType = EventType> = {
  [T in K]: { type: T; uid: string; ts: string; data: EventDataMap[T] };
}[K];

export type StoredEvent<K extends EventType = EventType> = {
  [T in K]: { id: string; worker_id: string; type: T; uid: string; ts: string; data: EventDataMap[T]; source: EventSource };
}[K];

/** An event to store, with who wrote it (the server sets it from the authenticated principal). */
export type SourcedEvent<K extends EventType = EventType> = IncomingEvent<K> & { source: EventSource };

/** A schema of one stored event type, for routes that return a single type (e.g. a decision). */
export function storedEventSchemaOf<K extends EventType>(type: K): TSchema {
  return storedOf(type);
}
