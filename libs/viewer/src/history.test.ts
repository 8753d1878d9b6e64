import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { eventFactory } from '@svc/test-support';
import { earlierPages, openAtEnd, type HistoryReader } from './history.js';
import { WorkerView } from './worker-view.js';

/** A worker's stored history, read as the gateway answers `before_id` pages (the API itself is tested in the gateway). */
function history(count: number, decorate: (index: number) => StoredEvent | undefined = () => undefined) {
  const event = eventFactory();
  const events = Array.from({ length: count }, (_, index) => decorate(index) ?? event('assistant', { text: `line ${index + 1}` }));
  events.forEach((stored, index) => (stored.id = String(index + 1)));
  const reads: string[] = [];
  const reader: HistoryReader = {
    before: async (beforeId, limit) => {
      reads.push(beforeId);
      const end = beforeId === 'end' ? events.length : Number(beforeId) - 1;
      return events.slice(Math.max(0, end - limit), end);
    },
    openRequests: async () =>
      events.filter(
        (e): e is StoredEvent<'control_request'> =>
          e.type === 'control_request' &&
          !events.some((d) => d.type === 'control_response' && (d.data as { request_id: string }).request_id === (e.data as { request_id: string }).request_id),
      ),
  };
  return { events, reader, reads };
}

describe('a view opened at the end of a long history', () => {
  it('holds the tail only, with an old open request pinned; earlier pages go in front, once each, up to the first event', async () => {
    const event = eventFactory();
    const { reader, reads } = history(2500, (index) =>
      index === 9 ? event('control_request', { request_id: 'old', tool_name: 'Write', input: { file_path: '/w/a' } }) : undefined,
    );
    const view = new WorkerView({ readOnly: false });
    await openAtEnd(view, reader, 200);
    expect(view.events.map((e) => e.id)).toEqual(Array.from({ length: 200 }, (_, i) => String(2301 + i)));
    expect(view.lastId).toBe('2500');
    expect(view.hasEarlier).toBe(true);
    expect(view.openRequests().map((r) => r.data.request_id)).toEqual(['old']);

    const readEarlier = earlierPages(view, reader, 1000);
    // Many scroll events at once: one read.
    const added = await Promise.all([readEarlier(), readEarlier(), readEarlier()]);
    expect(added).toEqual([1000, 0, 0]);
    expect(view.events[0]!.id).toBe('1301');
    while (view.hasEarlier) await readEarlier();
    expect(view.events.map((e) => e.id)).toEqual(Array.from({ length: 2500 }, (_, i) => String(i + 1)));
    expect(reads).toEqual(['end', '2301', '1301', '301']);
    expect(await readEarlier()).toBe(0);
    // Old requests came in as history: still the one open request, no notices.
    expect(view.openRequests().map((r) => r.data.request_id)).toEqual(['old']);
    expect(view.notices).toEqual([]);
  });

  it('a short history is whole at once: nothing earlier to read', async () => {
    const { reader } = history(30);
    const view = new WorkerView({ readOnly: false });
    await openAtEnd(view, reader);
    expect(view.events).toHaveLength(30);
    expect(view.hasEarlier).toBe(false);
  });

  it('a request decided between the two reads: its decision is in the tail and closes it', async () => {
    const event = eventFactory();
    const request = event('control_request', { request_id: 'r1', tool_name: 'Write', input: {} });
    const decision = event('control_response', { request_id: 'r1', decision: 'allow', decided_by: 'alice' });
    const view = new WorkerView({ readOnly: false });
    await openAtEnd(view, { openRequests: async () => [request as StoredEvent<'control_request'>], before: async () => [request, decision] });
    expect(view.openRequests()).toEqual([]);
    expect(view.closingOf('r1')?.decision?.decided_by).toBe('alice');
  });

  it('a page that is not just before the first event held is refused, and the view is unchanged', async () => {
    const { reader, events } = history(500);
    const view = new WorkerView({ readOnly: false });
    await openAtEnd(view, reader, 100);
    expect(() => view.prepend(events.slice(100, 200))).toThrow('events 101…200 are not the ones just before #401');
    expect(view.events[0]!.id).toBe('401');
  });
});
