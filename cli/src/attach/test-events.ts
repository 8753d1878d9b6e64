import type { EventData, EventType, StoredEvent } from '@svc/protocol';

/** Stored events for the renderer's tests: ids 1, 2, 3 … in the order made. */
export function eventFactory(workerId = 'wrk_test') {
  let id = 0;
  return function event<K extends EventType>(type: K, data: EventData<K>): StoredEvent<K> {
    id++;
    return { id: String(id), worker_id: workerId, uid: `u${id}`, type, ts: '2026-11-22T10:00:00.000Z', data } as StoredEvent<K>;
  };
}
