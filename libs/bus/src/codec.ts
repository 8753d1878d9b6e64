// JSON payloads and our headers on NATS messages; internal to libs/bus.
import { headers as createHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { headers } from '@svc/protocol';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function encode(payload: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(payload));
}

export function decode(data: Uint8Array): unknown {
  return JSON.parse(decoder.decode(data));
}

export function headersWith(requestId: string | undefined, extra: Record<string, string> = {}): MsgHdrs | undefined {
  const entries = Object.entries(extra);
  if (requestId === undefined && entries.length === 0) return undefined;
  const h = createHeaders();
  if (requestId !== undefined) h.set(headers.requestId, requestId);
  for (const [key, value] of entries) h.set(key, value);
  return h;
}
