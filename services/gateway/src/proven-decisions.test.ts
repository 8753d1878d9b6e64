import { describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { decisionsProvenAfter } from './proven-decisions.js';

const event = (id: number, type: StoredEvent['type'] = 'assistant') => ({ id: String(id), worker_id: 'w', type, uid: `u${id}`, ts: '2026-11-22T00:00:00.000Z', data: {} }) as StoredEvent;
const decision = (id: number) => event(id, 'control_response');
const ids = (events: StoredEvent[]) => events.map((e) => e.id);

describe('decisionsProvenAfter — what a long poll may answer from announcements alone', () => {
  it('decisions in a run of ids that follows the head without a gap, in id order, even when announced out of order', () => {
    const announced = [event(12), decision(13), event(11), decision(14)];
    expect(decisionsProvenAfter(announced, '10', '5')).toEqual({ items: [decision(13), decision(14)], decisionsAfterHead: 2 });
  });

  it('nothing past a missing id: an announcement lost or late leaves the rest to the store', () => {
    const proven = decisionsProvenAfter([decision(11), decision(13)], '10', '0');
    expect(ids(proven.items)).toEqual(['11']);
    expect(decisionsProvenAfter([decision(12)], '10', '0')).toEqual({ items: [], decisionsAfterHead: 0 });
  });

  it('events at or before the head were in the read already and are ignored; decisions at or before the cursor are counted but not answered', () => {
    const proven = decisionsProvenAfter([decision(9), decision(10), decision(11), decision(12)], '10', '11');
    expect(ids(proven.items)).toEqual(['12']);
    expect(proven.decisionsAfterHead).toBe(2);
  });

  it('an announcement heard twice counts once', () => {
    expect(decisionsProvenAfter([decision(3), decision(3), event(4)], '2', '0')).toEqual({ items: [decision(3)], decisionsAfterHead: 1 });
  });
});
