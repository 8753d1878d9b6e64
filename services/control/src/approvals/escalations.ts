import type { WorkerDirectory } from '@svc/auth';
import type { DecisionPolicy } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { ControlRequestLog, StoredRequest } from '@svc/store';
import { deadlineOf } from '../decisions.js';
import type { ApprovalFacts } from './approval-facts.js';
import type { ApprovalStore } from './approval-store.js';
import { routeOfRequest } from './deciders.js';

export interface EscalationsDeps {
  workers: Pick<WorkerDirectory, 'get'>;
  requests: Pick<ControlRequestLog, 'findRequest'>;
  approvals: Pick<ApprovalStore, 'escalate'>;
  facts: Pick<ApprovalFacts, 'escalated'>;
  policyOf(workerId: string): Promise<DecisionPolicy>;
  logger: Logger;
}

/**
 * Escalation (docs/teams.md): a routed request still undecided `escalate_after_s` after it was
 * stored is offered to its route's `escalate_to` too, its deadline unchanged. Like the deadlines,
 * every control replica keeps a clock for every such request; the escalation is recorded once
 * (its row's key), and only the replica whose row it is announces it.
 */
export function createEscalations(deps: EscalationsDeps) {
  const log = deps.logger.child({ component: 'escalations' });
  const timers = new Map<string, NodeJS.Timeout>();
  const keyOf = (workerId: string, requestId: string) => `${workerId}\u0000${requestId}`;
  let stopped = false;

  async function escalate(request: StoredRequest): Promise<void> {
    const { worker_id: workerId, data } = request.event;
    const current = await deps.requests.findRequest(workerId, data.request_id);
    if (!current || current.decision || current.withdrawn) return;
    const route = routeOfRequest(await deps.workers.get(workerId), request.event);
    if (!route?.escalate_to) return;
    const at = new Date();
    if (!(await deps.approvals.escalate(workerId, data.request_id, route.escalate_to, at))) return;
    const deadline = new Date(deadlineOf(request, await deps.policyOf(workerId)));
    await deps.facts.escalated(request.event, route, at, deadline);
    log.info({ worker_id: workerId, request_id: data.request_id, to: route.escalate_to }, 'request escalated');
  }

  function arm(key: string, request: StoredRequest, at: number): void {
    const timer = setTimeout(
      () => {
        escalate(request)
          .then(() => timers.delete(key))
          .catch((err: unknown) => {
            log.error({ err, worker_id: request.event.worker_id, request_id: request.event.data.request_id }, 'could not escalate a request; retrying');
            if (!stopped) arm(key, request, Date.now() + 1000);
          });
      },
      Math.max(0, at - Date.now()),
    );
    timer.unref();
    timers.set(key, timer);
  }

  return {
    /** Starts the clock of a routed request whose route escalates (again harmless). */
    async watch(request: StoredRequest): Promise<void> {
      const key = keyOf(request.event.worker_id, request.event.data.request_id);
      if (stopped || timers.has(key)) return;
      const route = routeOfRequest(await deps.workers.get(request.event.worker_id), request.event);
      if (!route?.escalate_after_s || stopped || timers.has(key)) return;
      arm(key, request, request.storedAt.getTime() + route.escalate_after_s * 1000);
    },

    /** A decision or a withdrawal closed the request. */
    cancel(workerId: string, requestId: string): void {
      const key = keyOf(workerId, requestId);
      clearTimeout(timers.get(key));
      timers.delete(key);
    },

    stop(): void {
      stopped = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
    },
  };
}

export type Escalations = ReturnType<typeof createEscalations>;
