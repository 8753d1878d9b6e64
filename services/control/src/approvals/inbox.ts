import type { WorkerDirectory } from '@svc/auth';
import {
  namedAmong,
  roleIncludes,
  routeDeciders,
  workerRoleOf,
  type AccessPerson,
  type ApprovalItem,
  type DecisionPolicy,
  type ListResponseOf,
  type WorkerRecord,
} from '@svc/protocol';
import type { ControlRequestLog, StoredRequest } from '@svc/store';
import { deadlineOf } from '../decisions.js';
import type { ApprovalStore } from './approval-store.js';
import { routeOfRequest } from './deciders.js';

/** At most this many requests in one answer (the nearest deadlines). */
const INBOX_LIMIT = 500;

/**
 * A person's inbox (docs/teams.md): every open request they may decide now — a routed one if its
 * route (or, escalated, its `escalate_to`) names them, any other on a worker they approve — the
 * nearest deadline first. Admins see every open request. The open requests are read from the
 * log at each call; the workers' records from the directory the service keeps.
 */
export function createInbox(deps: {
  requests: Pick<ControlRequestLog, 'allOpenRequests'>;
  workers: Pick<WorkerDirectory, 'get'>;
  approvals: Pick<ApprovalStore, 'escalated' | 'votesOf'>;
  policyOf(workerId: string): Promise<DecisionPolicy>;
}) {
  async function itemFor(person: AccessPerson, request: StoredRequest, worker: WorkerRecord): Promise<ApprovalItem | undefined> {
    const { worker_id: workerId, data } = request.event;
    const deadline = new Date(deadlineOf(request, await deps.policyOf(workerId))).toISOString();
    const route = routeOfRequest(worker, request.event);
    if (!route) {
      const role = workerRoleOf(person, worker);
      return person.admin || (role && roleIncludes(role, 'approver')) ? { worker_id: workerId, request: request.event, deadline } : undefined;
    }
    const escalated = route.escalate_to ? await deps.approvals.escalated(workerId, data.request_id) : false;
    const deciders = routeDeciders(route, escalated);
    if (!person.admin && !namedAmong(deciders, person)) return undefined;
    const voters = (await deps.approvals.votesOf(workerId, data.request_id)).filter((vote) => vote.decision === 'allow').map((vote) => vote.voter);
    return {
      worker_id: workerId,
      request: request.event,
      deadline,
      route: { rule: route.match, deciders, escalated, quorum: route.quorum ?? 1, allows: voters.length, voters },
    };
  }

  return {
    async of(person: AccessPerson): Promise<ListResponseOf<ApprovalItem>> {
      const items: ApprovalItem[] = [];
      for (const request of await deps.requests.allOpenRequests()) {
        const worker = await deps.workers.get(request.event.worker_id);
        if (!worker || worker.status === 'completed' || worker.status === 'failed' || worker.status === 'stopped') continue;
        const item = await itemFor(person, request, worker);
        if (item) items.push(item);
      }
      items.sort((a, b) => a.deadline.localeCompare(b.deadline));
      return { items: items.slice(0, INBOX_LIMIT), total: items.length };
    },
  };
}

export type Inbox = ReturnType<typeof createInbox>;
