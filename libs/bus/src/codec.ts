// JSON payloads and our headers on NATS messages; internal to libs/bus.
import { headers as createHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { headers } from '@svc/protocol';
import { contextFromHeaders, isSampled, traceHeaders, tracingEnabled, type Context } from '@svc/service-kit';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** JSON, UTF-8; bytes already encoded (a payload built by hand from JSON pieces) go as they are. */
export function encode(payload: unknown): Uint8Array {
  if (payload instanceof Uint8Array) return payload;
  return encoder.encode(JSON.stringify(payload));
}

export function decode(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

/** Our headers for a message: the request id, `extra`, and the trace context of `trace` (with tracing on). */
export function headersWith(requestId: string | undefined, extra: Record<string, string> = {}, trace?: Context): MsgHdrs | undefined {
  const entries = Object.entries(extra);
  if (trace !== undefined && tracingEnabled()) entries.push(...Object.entries(traceHeaders(trace)));
  if (requestId === undefined && entries.length === 0) return undefined;
  const h = createHeaders();
  if (requestId !== undefined) h.set(headers.requestId, requestId);
  for (const [key, value] of entries) h.set(key, value);
  return h;
}

/**
 * The trace context a message carries (`traceparent`), to continue its trace; undefined with
 * tracing off, when it carries none, or when its trace is not sampled.
 */
export function traceContextOf(msg: { headers?: MsgHdrs | undefined }): Context | undefined {
  if (!tracingEnabled() || !msg.headers) return undefined;
  const ctx = contextFromHeaders(msg.headers, (h, name) => (h.has(name) ? h.get(name) : undefined));
  return isSampled(ctx) ? ctx : undefined;
}
