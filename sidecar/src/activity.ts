import { activityData, type WorkerActivity } from '@svc/protocol';
import type { AgentEvent } from './adapters/adapter.js';

export interface ActivityOptions {
  /** Where the activity events go (the outbox, in order with the agent's own). */
  record(event: AgentEvent): void;
  /** The agent has turns (its adapter's `turns`); without, no activity is reported. */
  hasTurns: boolean;
  /** Turns it is to run before it is idle: 1 when it starts with a prompt. */
  turnsAhead: number;
  /** The run ends after its first result (one-shot): no `idle` is reported, the agent exits. */
  endsAfterResult: boolean;
  /**
   * The agent may take a queued message into the running turn instead of a turn of its own
   * (Claude Code does when the turn has another model request to make): after a result with
   * turns still ahead, the next turn must show within this long, or there is none.
   */
  queuedTurnWaitMs?: number | undefined;
  /** Called with each activity reported (the idle timeout's clock). */
  onChange?(activity: WorkerActivity): void;
}

/**
 * The agent's activity as the sidecar sees its turns (docs/conversations.md, "Activity"): a
 * request waiting for a person → `waiting_for_decision`; else a turn ahead (started or queued,
 * not yet ended by its `result`) → `working`; else `idle`. Each change is one `system` event of
 * subtype `activity`, which the session service keeps in the worker's record.
 */
export function createActivity(options: ActivityOptions) {
  let turnsAhead = options.turnsAhead;
  let waiting = 0;
  let ended = false;
  let reported: WorkerActivity | undefined;
  /** Armed after a result with turns ahead, by an agent that may have absorbed them. */
  let absorbedCheck: NodeJS.Timeout | undefined;

  function report(activity: WorkerActivity, why: string): void {
    if (activity === reported) return;
    reported = activity;
    options.record({ type: 'system', data: activityData(activity, why) });
    options.onChange?.(activity);
  }

  function settle(why: string): void {
    if (ended) return;
    // An agent without turns says nothing the sidecar could tell its activity by.
    if (!options.hasTurns) return;
    if (waiting > 0) return report('waiting_for_decision', why);
    if (turnsAhead > 0) return report('working', why);
    if (!options.endsAfterResult) report('idle', why);
  }

  return {
    /** The agent started: working on its prompt, or idle without one. */
    started: () => settle(turnsAhead > 0 ? 'the agent started on its prompt' : 'the agent started; it waits for a message'),
    /** A person's message reached the agent; `startsTurn`: as a turn of its own (else it joined the running turn). */
    messageDelivered(startsTurn: boolean): void {
      if (startsTurn) turnsAhead++;
      settle('a message reached it');
    },
    /** The agent's `result`: a turn ended. */
    turnEnded(): void {
      turnsAhead = Math.max(0, turnsAhead - 1);
      settle(turnsAhead > 0 ? 'a turn ended; the next one is queued' : 'its turn ended');
      if (turnsAhead === 0 || options.queuedTurnWaitMs === undefined) return;
      clearTimeout(absorbedCheck);
      // Only the turns queued now: a message delivered meanwhile is a turn of its own.
      const queued = turnsAhead;
      absorbedCheck = setTimeout(() => {
        turnsAhead = Math.max(0, turnsAhead - queued);
        settle('its turn ended; the messages queued behind it were taken into that turn');
      }, options.queuedTurnWaitMs);
    },
    /** A turn is under way (the agent started one, said or asked something): a queued turn has begun, or one of its own. */
    turnActive(): void {
      clearTimeout(absorbedCheck);
      absorbedCheck = undefined;
      if (turnsAhead > 0 || ended) return;
      turnsAhead = 1;
      settle('the agent started a turn');
    },
    /** How many of its requests wait for a person now. */
    waitingFor(requests: number): void {
      if (requests === waiting) return;
      waiting = requests;
      settle(requests > 0 ? 'a request waits for a person' : 'the requests were answered');
    },
    /** The agent stopped: nothing more is reported for this run, `suspended` when it can be resumed. */
    stopped(resumable: boolean, why: string): void {
      if (ended) return;
      ended = true;
      clearTimeout(absorbedCheck);
      if (resumable) report('suspended', why);
    },
    current: (): WorkerActivity | undefined => reported,
  };
}

export type Activity = ReturnType<typeof createActivity>;
