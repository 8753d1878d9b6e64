import type { EventData, EventSource, EventType, IncomingEvent, StoredEvent } from '@svc/protocol';

/** A small valid `system` event with the given uid (its message defaults to the uid). */
export function systemEvent(uid: string, message = uid): IncomingEvent {
  return { type: 'system', uid, ts: new Date().toISOString(), data: { level: 'info', message } };
}

/** Stored events for a viewer's tests: ids 1, 2, 3 … in the order made, the worker's unless `source` says who wrote it. */
export function eventFactory(workerId = 'wrk_test') {
  let id = 0;
  return function event<K extends EventType>(type: K, data: EventData<K>, source: EventSource = 'worker'): StoredEvent<K> {
    id++;
    return { id: String(id), worker_id: workerId, uid: `u${id}`, type, ts: '2026-11-22T10:00:00.000Z', data, source } as StoredEvent<K>;
  };
}
