import type { StoredEvent } from '@svc/protocol';

/**
 * The decisions a long poll may answer with straight from the announcements it heard, without
 * reading the store again: ids are per worker and have no holes, so the announced events that
 * follow `lastId` (the worker's head when the poll read the store) one by one prove that no
 * event in between was missed. Stops at the first missing id (an announcement lost or still on
 * its way); what lies beyond it only the store can say.
 *
 * `decisionsAfterHead` counts every decision past the head (for `total`); `items` are those
 * after the poller's cursor.
 */
export function decisionsProvenAfter(announced: readonly StoredEvent[], lastId: string, afterId: string): { items: StoredEvent[]; decisionsAfterHead: number } {
  const cursor = BigInt(afterId);
  let head = BigInt(lastId);
  const byId = new Map<bigint, StoredEvent>();
  for (const event of announced) {
    const id = BigInt(event.id);
    if (id > head) byId.set(id, event);
  }
  const items: StoredEvent[] = [];
  let decisionsAfterHead = 0;
  for (let next = byId.get(head + 1n); next; next = byId.get(head + 1n)) {
    head += 1n;
    if (next.type !== 'control_response') continue;
    decisionsAfterHead += 1;
    if (head > cursor) items.push(next);
  }
  return { items, decisionsAfterHead };
}
