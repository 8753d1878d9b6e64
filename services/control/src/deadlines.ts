import type { DecisionPolicy } from '@svc/protocol';
import { gauge, type Logger } from '@svc/service-kit';
import type { StoredRequest } from '@svc/store';
import { deadlineOf } from './decisions.js';

/** Node's timers hold at most 2^31-1 ms; a longer wait is taken in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface DeadlinesDeps {
  policyOf(workerId: string): Promise<DecisionPolicy>;
  /** Lets the policy decide the request (a no-op when someone decided first). */
  expire(request: StoredRequest, policy: DecisionPolicy): Promise<unknown>;
  /** The deadline of an open request is near (`nearAt`): a person who means to decide should now. */
  near?: (request: StoredRequest, deadline: Date) => void;
  logger: Logger;
}

/** How long before its deadline a request counts as near it: a minute, or the last quarter of a shorter wait. */
export function nearAt(storedAt: number, deadline: number): number {
  return deadline - Math.min(60_000, (deadline - storedAt) / 4);
}

/** The deadline keepers of this process (one per control replica; tests may run several in one). */
const keepers = new Set<{ open(): number; overdue(graceMs: number): number }>();
/** How many closed requests a keeper remembers (for a watch that was under way when one closed). */
const CLOSED_REMEMBERED = 10_000;
/** A request still open this long after its deadline is overdue: its timeout decision is failing. */
const OVERDUE_GRACE_MS = 5_000;

// Every replica keeps every open request's deadline, so each counts them all: the largest count is the count.
gauge({
  name: 'svc_open_requests',
  help: 'Tool requests waiting for a decision (every control replica keeps them all: take the max over replicas).',
  collect() {
    this.set(Math.max(0, ...[...keepers].map((keeper) => keeper.open())));
  },
});
gauge({
  name: 'svc_open_requests_overdue',
  help: 'Open requests more than 5 s past their deadline: their timeout decision keeps failing (the store away?).',
  collect() {
    this.set(Math.max(0, ...[...keepers].map((keeper) => keeper.overdue(OVERDUE_GRACE_MS))));
  },
});

/**
 * One timer per open request. Every control replica keeps timers for every open request, so a
 * deadline fires even when a replica is gone; when two fire, the store keeps the first decision
 * and the second changes nothing. A failed expiry is tried again a second later.
 */
export function createDeadlines(deps: DeadlinesDeps) {
  const log = deps.logger.child({ component: 'deadlines' });
  const timers = new Map<string, NodeJS.Timeout>();
  const nearTimers = new Map<string, NodeJS.Timeout>();
  /** Each open request as its control event brought it, and when its deadline is. */
  const open = new Map<string, { request: StoredRequest; at: number }>();
  const keeper = {
    open: () => timers.size,
    overdue(graceMs: number) {
      const now = Date.now();
      let overdue = 0;
      for (const { at } of open.values()) if (at + graceMs < now) overdue++;
      return overdue;
    },
  };
  keepers.add(keeper);
  const keyOf = (workerId: string, requestId: string) => `${workerId}\u0000${requestId}`;
  /**
   * Requests closed lately, with the request where it was open here: a request and its decision
   * often arrive together (the sidecar's rules answer at once), and the decision's cancel can
   * come while the request's watch still reads its policy. A closed request never opens again,
   * so its watch then arms nothing.
   */
  const closed = new Map<string, StoredRequest | undefined>();
  let stopped = false;

  function arm(key: string, request: StoredRequest, at: number, policy: DecisionPolicy): void {
    const wait = Math.min(Math.max(0, at - Date.now()), MAX_TIMER_MS);
    const timer = setTimeout(() => {
      if (Date.now() < at) return arm(key, request, at, policy);
      deps
        .expire(request, policy)
        .then(() => {
          timers.delete(key);
          open.delete(key);
        })
        .catch((err: unknown) => {
          log.error({ err, worker_id: request.event.worker_id, request_id: request.event.data.request_id }, 'could not store the timeout decision; retrying');
          if (!stopped) arm(key, request, Date.now() + 1000, policy);
        });
    }, wait);
    timer.unref();
    timers.set(key, timer);
    if (!open.has(key)) open.set(key, { request, at });
  }

  return {
    /** Starts the clock of a request (again harmless: one timer per request). */
    async watch(request: StoredRequest): Promise<void> {
      const key = keyOf(request.event.worker_id, request.event.data.request_id);
      if (stopped || timers.has(key) || closed.has(key)) return;
      const policy = await deps.policyOf(request.event.worker_id);
      if (stopped || timers.has(key) || closed.has(key)) return; // watched, or closed, meanwhile
      const deadline = deadlineOf(request, policy);
      arm(key, request, deadline, policy);
      const near = nearAt(request.storedAt.getTime(), deadline);
      if (deps.near && near > Date.now() && near - Date.now() <= MAX_TIMER_MS) {
        const timer = setTimeout(() => {
          nearTimers.delete(key);
          deps.near?.(request, new Date(deadline));
        }, near - Date.now());
        timer.unref();
        nearTimers.set(key, timer);
      }
    },

    /**
     * A decision or a withdrawal closed the request. Answers the request if it was open here (or
     * closed lately), as its control event brought it: the first of its id, the one decided.
     */
    cancel(workerId: string, requestId: string): StoredRequest | undefined {
      const key = keyOf(workerId, requestId);
      const request = open.get(key)?.request ?? closed.get(key);
      closed.set(key, request);
      if (closed.size > CLOSED_REMEMBERED) closed.delete(closed.keys().next().value!);
      clearTimeout(timers.get(key));
      clearTimeout(nearTimers.get(key));
      timers.delete(key);
      nearTimers.delete(key);
      open.delete(key);
      return request;
    },

    count: () => timers.size,

    stop(): void {
      stopped = true;
      keepers.delete(keeper);
      for (const timer of [...timers.values(), ...nearTimers.values()]) clearTimeout(timer);
      timers.clear();
      nearTimers.clear();
      open.clear();
    },
  };
}

export type Deadlines = ReturnType<typeof createDeadlines>;
