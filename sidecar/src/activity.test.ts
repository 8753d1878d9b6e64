import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createActivity } from './activity.js';
import type { AgentEvent } from './adapters/adapter.js';

function activityOf(options: { hasTurns?: boolean; turnsAhead?: number; queuedTurnWaitMs?: number } = {}) {
  const reported: string[] = [];
  const activity = createActivity({
    record: (event: AgentEvent) => void reported.push(String(event.type === 'system' ? event.data.details?.['activity'] : event.type)),
    hasTurns: options.hasTurns ?? true,
    turnsAhead: options.turnsAhead ?? 1,
    endsAfterResult: false,
    queuedTurnWaitMs: options.queuedTurnWaitMs,
  });
  return { activity, reported };
}

describe("the agent's activity", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('a message queued behind a running turn keeps the agent working through the first result, idle after the second', () => {
    const { activity, reported } = activityOf();
    activity.started();
    activity.messageDelivered(true);
    activity.turnEnded();
    expect(reported).toEqual(['working']);
    activity.turnEnded();
    expect(reported).toEqual(['working', 'idle']);
  });

  it('a message steered into the running turn (Codex) starts no turn: idle after its one result', () => {
    const { activity, reported } = activityOf();
    activity.started();
    activity.messageDelivered(false);
    activity.turnEnded();
    expect(reported).toEqual(['working', 'idle']);
  });

  it('an agent that may take a queued message into its turn: idle when no turn shows within the wait, working on when one does', () => {
    const absorbed = activityOf({ queuedTurnWaitMs: 3000 });
    absorbed.activity.started();
    absorbed.activity.messageDelivered(true);
    absorbed.activity.turnEnded();
    vi.advanceTimersByTime(2999);
    expect(absorbed.reported).toEqual(['working']);
    vi.advanceTimersByTime(1);
    expect(absorbed.reported).toEqual(['working', 'idle']);

    const queued = activityOf({ queuedTurnWaitMs: 3000 });
    queued.activity.started();
    queued.activity.messageDelivered(true);
    queued.activity.turnEnded();
    queued.activity.turnActive();
    vi.advanceTimersByTime(10_000);
    expect(queued.reported).toEqual(['working']);
    queued.activity.turnEnded();
    expect(queued.reported).toEqual(['working', 'idle']);

    // A message delivered while the check waits is a turn of its own: the check takes only the turns it waited for.
    const later = activityOf({ queuedTurnWaitMs: 3000 });
    later.activity.started();
    later.activity.messageDelivered(true);
    later.activity.turnEnded();
    vi.advanceTimersByTime(1000);
    later.activity.messageDelivered(true);
    vi.advanceTimersByTime(2000);
    expect(later.reported).toEqual(['working']);
  });

  it('the agent starting a turn of its own while idle is working', () => {
    const { activity, reported } = activityOf();
    activity.started();
    activity.turnEnded();
    activity.turnActive();
    activity.turnEnded();
    expect(reported).toEqual(['working', 'idle', 'working', 'idle']);
  });

  it('an agent without turns reports nothing; a resumed run starts idle; a stopped one is suspended when a message resumes it, else says nothing more', () => {
    const generic = activityOf({ hasTurns: false });
    generic.activity.started();
    generic.activity.turnEnded();
    generic.activity.messageDelivered(true);
    expect(generic.reported).toEqual([]);

    const resumed = activityOf({ turnsAhead: 0 });
    resumed.activity.started();
    resumed.activity.stopped(true, 'idle for 2 s');
    resumed.activity.messageDelivered(true);
    expect(resumed.reported).toEqual(['idle', 'suspended']);

    const ended = activityOf();
    ended.activity.started();
    ended.activity.stopped(false, 'it exited');
    expect(ended.reported).toEqual(['working']);
  });
});
