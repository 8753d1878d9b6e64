import type { DecisionPolicy } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { StoredRequest } from '@svc/store';
import { deadlineOf } from './decisions.js';

/** Node's timers hold at most 2^31-1 ms; a longer wait is taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DeadlinesDeps {
  policyOf(workerId: string): Promise<DecisionPolicy>;
  /** Lets the policy decide the request (a no-op when someone decided first). */
  expire(request: StoredRequest, policy: DecisionPolicy): Promise<unknown>;
  logger: Logger;
}

/**
 * One timer per open request. Every control replica keeps timers for every open request, so a
 * deadline fires even when a replica is gone; when two fire, the store keeps the first decision
 * and the second changes nothing. A failed expiry is tried again a second later.
 */
export function createDeadlines(deps: DeadlinesDeps) {
  const log = deps.logger.child({ component: 'deadlines' });
  const timers = new Map<string, NodeJS.Timeout>();
  const keyOf = (workerId: string, requestId: string) => `${workerId}\u0000${requestId}`;
  let stopped = false;

  function arm(key: string, request: StoredRequest, at: number, policy: DecisionPolicy): void {
    const wait = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    const timer = setTimeout(() => {
      if (Date.now() < at) return arm(key, request, at, policy);
      deps
        .expire(request, policy)
        .then(() => timers.delete(key))
        .catch((err: unknown) => {
          log.error({ err, worker_id: request.event.worker_id, request_id: request.event.data.request_id }, 'could not store the timeout decision; retrying');
          if (!stopped) arm(key, request, Date.now() + 1000, policy);
        });
    }, wait);
    timer.unref();
    timers.set(key, timer);
  }

  return {
    /** Starts the clock of a request (again harmless: one timer per request). */
    async watch(request: StoredRequest): Promise<void> {
      const key = keyOf(request.event.worker_id, request.event.data.request_id);
      if (stopped || timers.has(key)) return;
      const policy = await deps.policyOf(request.event.worker_id);
      if (stopped || timers.has(key)) return; // watched meanwhile
      arm(key, request, deadlineOf(request, policy), policy);
    },

    /** A decision or a withdrawal closed the request. */
    cancel(workerId: string, requestId: string): void {
      const key = keyOf(workerId, requestId);
      clearTimeout(timers.get(key));
      timers.delete(key);
    },

    count: () => timers.size,

    stop(): void {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}

export type Deadlines = ReturnType<typeof createDeadlines>;
