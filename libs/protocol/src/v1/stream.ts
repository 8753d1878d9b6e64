import Type, { type Static } from 'typebox';
import { StoredEventSchema } from './envelope.js';
import { EventId } from './primitives.js';

/**
 * Frames the server sends on `WS /v1/workers/{id}/sdk-events/stream` (JSON text frames; the
 * client sends nothing). See docs/event-stream.md.
 * @public
 */
export const StreamEventFrame = Type.Object({ kind: Type.Literal('event'), event: StoredEventSchema }, { additionalProperties: false });
/**
 * Sent once, when the replay has reached the newest stored event: what follows is live.
 * @public
 */
export const StreamLiveFrame = Type.Object({ kind: Type.Literal('live'), last_id: EventId }, { additionalProperties: false });

export type StreamFrame = Static<typeof StreamEventFrame> | Static<typeof StreamLiveFrame>;

/**
 * How a browser authenticates a WebSocket (it cannot set `Authorization` on an upgrade, and a
 * token in the URL would land in logs): it offers `[WS_PROTOCOL, WS_BEARER_PREFIX + token]` as
 * subprotocols; the gateway reads the token there and answers with `WS_PROTOCOL`, never the token.
 */
export const WS_PROTOCOL = 'svc.v1';
export const WS_BEARER_PREFIX = 'bearer.';

/** Close codes of the event stream. */
export const STREAM_CLOSE = {
  /** The server is shutting down; reconnect with `after_id` = the last id received. */
  serverRestart: 1012,
  /** The stream could not continue (for example the store did not answer); reconnect later. */
  unavailable: 1011,
} as const;
