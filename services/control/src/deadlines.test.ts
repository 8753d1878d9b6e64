import { describe, expect, it } from 'vitest';
import { DEFAULT_DECISION_POLICY, type StoredEvent } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { createDeadlines, nearAt } from './deadlines.js';

const request = (requestId: string) => ({
  event: {
    id: '1',
    worker_id: 'wrk_1',
    type: 'control_request',
    uid: requestId,
    ts: new Date().toISOString(),
    data: { request_id: requestId, tool_name: 'Bash', input: {} },
  } as StoredEvent<'control_request'>,
  storedAt: new Date(),
});

describe('deadlines', () => {
  it('a request closed while its watch still reads the policy gets no timer (a request and its decision arrive together)', async () => {
    let answerPolicy: () => void = () => {};
    const expired: string[] = [];
    const deadlines = createDeadlines({
      policyOf: () => new Promise((resolve) => (answerPolicy = () => resolve(DEFAULT_DECISION_POLICY))),
      expire: async (r) => void expired.push(r.event.data.request_id),
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    const watching = deadlines.watch(request('r1'));
    deadlines.cancel('wrk_1', 'r1');
    answerPolicy();
    await watching;
    expect(deadlines.count()).toBe(0);
    // Watched again later (a replay of the stored request): still closed.
    const again = deadlines.watch(request('r1'));
    answerPolicy();
    await again;
    expect(deadlines.count()).toBe(0);
    deadlines.stop();
    expect(expired).toEqual([]);
  });

  it('closing a request answers it as it was watched (the decision is audited with it), again when closed twice; one never watched: undefined', async () => {
    const deadlines = createDeadlines({
      policyOf: async () => DEFAULT_DECISION_POLICY,
      expire: async () => {},
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    const watched = request('r1');
    await deadlines.watch(watched);
    expect(deadlines.cancel('wrk_1', 'r1')).toBe(watched);
    // The decision's RPC and its control event both close it, in either order.
    expect(deadlines.cancel('wrk_1', 'r1')).toBe(watched);
    expect(deadlines.count()).toBe(0);
    expect(deadlines.cancel('wrk_1', 'never-watched')).toBeUndefined();
    deadlines.stop();
  });

  it('a deadline is near a minute before it, or in the last quarter of a shorter wait; near is told once, and not after a decision', async () => {
    expect(nearAt(0, 600_000)).toBe(540_000);
    expect(nearAt(0, 40_000)).toBe(30_000);
    const near: string[] = [];
    const deadlines = createDeadlines({
      policyOf: async () => ({ ...DEFAULT_DECISION_POLICY, decision_timeout_s: 0.4 }),
      expire: async () => {},
      near: (r, deadline) => void near.push(`${r.event.data.request_id}@${deadline.getTime() - r.storedAt.getTime()}`),
      logger: createLogger({ name: 'test', level: 'silent' }),
    });
    await deadlines.watch(request('told'));
    await deadlines.watch(request('decided'));
    deadlines.cancel('wrk_1', 'decided');
    // Past both deadlines (0.4 s): the decided one's "near" would have been told by now.
    const PAST_DEADLINES_MS = 500;
    await new Promise((resolve) => setTimeout(resolve, PAST_DEADLINES_MS));
    deadlines.stop();
    expect(near).toEqual(['told@400']);
  });
});
