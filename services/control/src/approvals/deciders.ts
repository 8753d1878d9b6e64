import type { UserAssertion } from '@svc/auth';
import {
  CodedError,
  namedAmong,
  roleIncludes,
  roleRequiredError,
  routeDeciders,
  routeOf,
  workerRoleOf,
  type ApprovalRoute,
  type StoredEvent,
  type WorkerRecord,
} from '@svc/protocol';

/** How a request is decided: by its route's people (and, once escalated, its `escalate_to`), or by the session's approvers. */
export interface Routing {
  route?: ApprovalRoute | undefined;
  escalated: boolean;
}

/** The route a request of `worker` takes (the first of its template's that matches), if any. */
export function routeOfRequest(worker: WorkerRecord | undefined, request: StoredEvent<'control_request'>): ApprovalRoute | undefined {
  return routeOf(worker?.approvals, { tool_name: request.data.tool_name, input: request.data.input })?.route;
}

/** Who may decide, as principals, for the messages: a route's people, or the session's approvers. */
function decidersOf(routing: Routing): string[] {
  return routing.route ? routeDeciders(routing.route, routing.escalated) : [];
}

/**
 * Whether `person` may decide a request of `worker` (docs/teams.md), checked where decisions are
 * taken — the assertion says who the gateway authenticated, this says whether they may:
 * - a routed request: the people its route names (after escalation, its `escalate_to` too) and
 *   admins — not the owner, not the session's approvers (`403 not_a_decider`, naming who may);
 * - any other: its owner, admins, and the people its access list makes approvers or more.
 * Someone who may not see the worker is told it does not exist. A decision link was made for
 * one person who could decide when it was sent, and grants that one decision.
 */
export function checkDecider(person: UserAssertion, worker: WorkerRecord | undefined, routing: Routing): void {
  if (person.channel === 'link' || person.admin) return;
  const role = worker && workerRoleOf(person, worker);
  if (!worker || !role) throw new CodedError('worker_not_found', `worker ${person.workerId} does not exist`);
  if (routing.route) {
    const deciders = decidersOf(routing);
    if (namedAmong(deciders, person)) return;
    throw new CodedError(
      'not_a_decider',
      `request ${person.requestId} is routed to ${deciders.join(', ')} by the rule ${routing.route.match}${routing.escalated ? ' (escalated)' : ''}: only they (and admins) may decide it (docs/teams.md)`,
      { deciders, rule: routing.route.match },
    );
  }
  if (!roleIncludes(role, 'approver')) throw roleRequiredError(role, 'approver', `worker ${person.workerId}`);
}
