import type { IncomingEvent } from '@svc/protocol';

/** A small valid `system` event with the given uid (its message defaults to the uid). */
export function systemEvent(uid: string, message = uid): IncomingEvent {
  return { type: 'system', uid, ts: new Date().toISOString(), data: { level: 'info', message } };
}
