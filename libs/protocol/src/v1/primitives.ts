import Type from 'typebox';

/** A cursor: a per-worker event id, serialized as a decimal string ("0" means "before the first event"). */
export const EventId = Type.String({
  pattern: '^(0|[1-9][0-9]{0,17})$',
  description: 'Per-worker event id (cursor) as a decimal string; "0" is before the first event.',
  examples: ['42'],
});

/** An id that is also a NATS subject token, a KV key and a URL segment: no dots, wildcards or spaces. */
function resourceId(what: string, example: string) {
  return Type.String({
    pattern: '^[A-Za-z0-9_-]{1,64}$',
    description: `${what} id: 1-64 characters of A-Z, a-z, 0-9, "_" and "-".`,
    examples: [example],
  });
}

export const WorkerId = resourceId('Worker', 'wrk_01JDX4Q2M8C9');
export const SessionId = resourceId('Session', 'ses_01JDX4Q2M8C9');

/**
 * The producer's idempotency key (the sidecar uses `<boot-id>:<n>`). Printable ASCII without
 * spaces, because it travels in the `Nats-Msg-Id` header as `<worker>:<uid>`.
 */
export const EventUid = Type.String({
  pattern: '^[\\x21-\\x7E]{1,200}$',
  description: 'Idempotency key chosen by the producer: 1-200 printable ASCII characters, no spaces.',
  examples: ['b7f3c2e1:17'],
});

/** A git commit id: forty hex digits (SHA-1), or sixty-four (SHA-256). */
export const CommitId = Type.String({ pattern: '^([0-9a-f]{40}|[0-9a-f]{64})$', description: 'A git commit id, hex.' });

/** An RFC 3339 timestamp. */
export const Timestamp = Type.String({ format: 'date-time', description: 'RFC 3339 timestamp.' });

/** A JSON object with any members (tool inputs are objects in every agent we support). */
export const JsonObject = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A JSON object.',
});

/** An environment variable's name: letters, digits and `_`, not starting with a digit. */
export const ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

/**
 * Environment variables by name. (`propertyNames` checks the names: a `Record` keyed by a
 * patterned string would not.)
 */
export const EnvironmentVariables = (description: string) =>
  Type.Record(Type.String(), Type.String(), { propertyNames: { pattern: ENV_NAME_PATTERN }, default: {}, description });
