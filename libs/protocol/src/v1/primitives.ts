import Type from 'typebox';

/** A cursor: a per-worker event id, serialized as a decimal string ("0" means "before the first event"). */
export const EventId = Type.String({
  pattern: '^(0|[1-9][0-9]{0,17})$',
  description: 'Per-worker event id (cursor) as a decimal string; "0" is before the first event.',
  examples: ['42'],
});

/**
 * A worker id. Restricted to characters that are safe in NATS subjects, KV keys and URLs
 * (no dots, wildcards or whitespace), because the id is a subject token.
 */
export const WorkerId = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,64}$',
  description: 'Worker id: 1-64 characters of A-Z, a-z, 0-9, "_" and "-".',
  examples: ['wrk_01JDX4Q2M8C9'],
});

/** A session id, same alphabet as a worker id. */
export const SessionId = Type.String({
  pattern: '^[A-Za-z0-9_-]{1,64}$',
  description: 'Session id: 1-64 characters of A-Z, a-z, 0-9, "_" and "-".',
  examples: ['ses_01JDX4Q2M8C9'],
});

/**
 * The producer's idempotency key (the sidecar uses `<boot-id>:<n>`). Printable ASCII without
 * spaces, because it travels in the `Nats-Msg-Id` header as `<worker>:<uid>`.
 */
export const EventUid = Type.String({
  pattern: '^[\\x21-\\x7E]{1,200}$',
  description: 'Idempotency key chosen by the producer: 1-200 printable ASCII characters, no spaces.',
  examples: ['b7f3c2e1:17'],
});

/** An RFC 3339 timestamp. */
export const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp.' });

/** A JSON object with any members (tool inputs are objects in every agent we support). */
export const JsonObject = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A JSON object.',
});
