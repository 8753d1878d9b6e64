import { verifyUserAssertion, type UserAssertion } from '@svc/auth';
import type { AppendDecision } from './decision-appender.js';
import {
  CodedError,
  controlResponseUid,
  DEFAULT_DENY_MESSAGE,
  type DecideAnswer,
  type DecideRequestType,
  type DecisionPolicy,
  checkEgressPattern,
  checkRuleLimits,
  parseRequestRule,
  routeOf,
  type ApprovalRoute,
  EGRESS_TOOL,
  GIT_PUSH_TOOL,
  decidedByOf,
  personSource,
  POLICY_SOURCE,
  type EventData,
  type EventSource,
  type SourcedEvent,
  type StoredEvent,
  type WorkerRecord,
} from '@svc/protocol';
import type { ApprovalFacts } from './approvals/approval-facts.js';
import type { ApprovalStore } from './approvals/approval-store.js';
import { checkDecider, routeOfRequest } from './approvals/deciders.js';
import { takeVote } from './approvals/quorum.js';
import { ruleScopeData } from './approvals/rule-scopes.js';
import { decisionsCounter, histogram, WAIT_BUCKETS_S, type Logger } from '@svc/service-kit';
import type { ControlRequestLog, StoredRequest } from '@svc/store';

/** A decision as an event to append: every decision on a request has one uid, so the first one wins. */
function decisionEvent(data: EventData<'control_response'>, source: EventSource): SourcedEvent {
  return { type: 'control_response', uid: controlResponseUid(data.request_id), ts: new Date().toISOString(), data, source };
}

/** Who decides when nobody did in time. */
const TIMEOUT_DECIDER = 'policy:timeout';

const decisionsTotal = decisionsCounter();
const requestWait = histogram({
  name: 'svc_decision_wait_seconds',
  help: 'How long a request waited for a person or for its deadline (from when it was stored to its decision), by who decided.',
  labelNames: ['decided_by'],
  buckets: WAIT_BUCKETS_S,
});

/** One decision this replica stored (only the one whose insert won counts it). */
function countDecision(decidedBy: 'person' | 'timeout', request: StoredRequest): void {
  decisionsTotal.inc({ decided_by: decidedBy });
  requestWait.observe({ decided_by: decidedBy }, Math.max(0, Date.now() - request.storedAt.getTime()) / 1000);
}

export interface DecisionsDeps {
  requests: Pick<ControlRequestLog, 'findRequest'>;
  /** Has the worker's one writer (event-ingest) append a decision (decision-appender.ts). */
  appendDecision: AppendDecision;
  /** The worker's decision deadline (from its template). */
  policyOf(workerId: string): Promise<DecisionPolicy>;
  /** The worker's record: who may decide its requests. */
  workerOf(workerId: string): Promise<WorkerRecord | undefined>;
  /** Routed requests' votes and escalations (docs/teams.md). */
  approvals: Pick<ApprovalStore, 'vote' | 'escalated'>;
  facts: Pick<ApprovalFacts, 'voted'>;
  /** Checks who decides (`SVC_USER_ASSERTION_KEY`, the gateway's key); unset: no person's decision is taken. */
  userAssertionKey: string | undefined;
  logger: Logger;
}

export function deadlineOf(request: StoredRequest, policy: DecisionPolicy): number {
  return request.storedAt.getTime() + policy.decision_timeout_s * 1000;
}

/** The 409 for a request that already has a decision: the deadline's is "closed", a person's "already decided". */
function refusal(existing: StoredEvent<'control_response'>): CodedError {
  const data = existing.data;
  const decider = decidedByOf(existing);
  if (decider === TIMEOUT_DECIDER) {
    return new CodedError('request_closed', `request ${data.request_id} expired at ${existing.ts}; the policy decided ${data.decision}`, {
      reason: 'expired',
      decision: data.decision,
      decided_at: existing.ts,
    });
  }
  // The name is shown only beside the source's sub it was stored with (a person's decision).
  const who = data.decided_by_name && decider === data.decided_by ? `${data.decided_by_name} (${decider})` : decider;
  return new CodedError('already_decided', `request ${data.request_id} was already decided (${data.decision}) by ${who} at ${existing.ts}`, {
    decided_by: decider,
    decided_at: existing.ts,
    decision: data.decision,
  });
}

/**
 * Takes decisions: checks who decides and what, and has the worker's one writer append it
 * (`appendDecision`). The first decision on a request wins across every control replica: a
 * person's decision is checked and appended in one transaction under the worker's row lock
 * (`svc_decide`, run by event-ingest), so a second one finds the first and is answered 409; and
 * every decision on a request is appended under one uid (`controlResponseUid`), which the store
 * keeps once per worker. Nothing here relies on memory.
 */
export function createDecisions(deps: DecisionsDeps) {
  const log = deps.logger.child({ component: 'decisions' });

  /** At (or after) the deadline: the policy decides, unless someone did first. */
  async function expire(request: StoredRequest, policy: DecisionPolicy): Promise<StoredEvent<'control_response'>> {
    const { request_id: requestId, tool_name: toolName } = request.event.data;
    // The sidecar's policy may have decided it (a decision under another uid): nothing to expire.
    const current = await deps.requests.findRequest(request.event.worker_id, requestId);
    if (current?.decision) return current.decision;
    const data: EventData<'control_response'> = {
      request_id: requestId,
      decision: policy.on_timeout,
      message:
        policy.on_timeout === 'deny'
          ? `Nobody decided on ${toolName} within ${policy.decision_timeout_s} s, so it was denied.`
          : `Nobody decided on ${toolName} within ${policy.decision_timeout_s} s; the worker's policy allows it.`,
      decided_by: TIMEOUT_DECIDER,
    };
    const appended = await deps.appendDecision(request.event.worker_id, decisionEvent(data, POLICY_SOURCE));
    const event = appended.decision!;
    const duplicate = appended.outcome !== 'stored';
    if (!duplicate) countDecision('timeout', request);
    if (!duplicate) log.info({ worker_id: request.event.worker_id, request_id: requestId, decision: policy.on_timeout }, 'deadline passed; the policy decided');
    return event;
  }

  /**
   * The person deciding, from the user assertion the gateway signed for this very decision: the
   * RPC's payload is anyone's to write who holds a NATS password that may call it, the
   * assertion only the gateway's (docs/nats-security.md).
   */
  async function personOf(request: DecideRequestType): Promise<UserAssertion> {
    if (!deps.userAssertionKey)
      throw new CodedError(
        'forbidden',
        'the decision is refused: this control service has no SVC_USER_ASSERTION_KEY to check who decides (docs/configuration.md)',
      );
    return verifyUserAssertion(deps.userAssertionKey, request.assertion, { workerId: request.worker_id, requestId: request.decision.request_id });
  }

  /** A person's rule pattern is matched on every later request: capped like any rule, and a `network` one must name `host:port` (the gateway's schema caps it too). */
  return {
    expire,

    /**
     * A person's decision: checks, in order, who decides (the user assertion), that the request
     * exists, is not withdrawn, has not expired and is undecided. Its audit record is written
     * from its announcement (control-events.ts).
     */
    async decide(request: DecideRequestType): Promise<DecideAnswer> {
      const person = await personOf(request);
      const { worker_id: workerId, decision: body } = request;
      const { routing, found } = await routingOf(deps, workerId, body.request_id);
      checkDecider(person, routing.worker, routing);
      if (body.scope === 'always') await checkRule(deps, workerId, body.request_id, body.input_pattern);
      else if (body.input_pattern !== undefined) checkRuleLimits(body.input_pattern, '/body/input_pattern');
      if (body.interrupt && body.decision !== 'deny')
        throw new CodedError('invalid_request', '/body/interrupt ends the agent\'s turn and goes only with decision "deny"');
      const policy = await deps.policyOf(workerId);
      let data = { ...personDecisionData(body, person), ...ruleScopeData(person, routing.worker, body) };
      const quorum = routing.route?.quorum ?? 1;
      if (body.updated_input !== undefined && found) checkUpdatedInput(routing, found.event, body.updated_input);
      if (quorum > 1 && body.decision === 'allow' && found) {
        const voted = await takeVote(deps, person, found, body, quorum, deadlineOf(found, policy));
        if (voted === 'expired') throw refusal(await expire(found, policy));
        if (voted && 'vote' in voted) return voted;
        if (voted) data = { ...data, message: data.message ?? `allowed by ${voted.voters.join(' and ')} (a quorum of ${quorum})` };
      }
      // The source names the person the gateway authenticated (the data's name is for display).
      const decision = decisionEvent(data, personSource(person.channel, person.sub));
      const appended = await deps.appendDecision(workerId, decision, policy.decision_timeout_s);
      const stored = appended.request && { event: appended.request, storedAt: new Date(appended.request_stored_at!) };
      switch (appended.outcome) {
        case 'not_found':
          throw new CodedError('request_not_found', `worker ${workerId} has no control request ${body.request_id}`);
        case 'withdrawn':
          throw new CodedError('request_closed', `request ${body.request_id} was withdrawn by the agent`, { reason: 'withdrawn' });
        // Decided already: by the sidecar's permission engine (an event it posted), by a person or by the deadline.
        case 'decided':
          throw refusal(appended.decision!);
        case 'expired':
          throw refusal(await expire(stored!, policy));
        case 'stored': {
          countDecision('person', stored!);
          log.info({ worker_id: workerId, request_id: body.request_id, decision: body.decision, decided_by: person.sub }, 'decided');
          return appended.decision!;
        }
      }
    },
  };
}

/**
 * How a request is decided: a worker with approval routes has its request read to find its route
 * (and whether it was escalated); any other is decided by its approvers, read no further.
 */
async function routingOf(deps: Pick<DecisionsDeps, 'workerOf' | 'requests' | 'approvals'>, workerId: string, requestId: string) {
  const worker = await deps.workerOf(workerId);
  if (!worker?.approvals?.length) return { routing: { worker, escalated: false }, found: undefined };
  const found = await deps.requests.findRequest(workerId, requestId);
  const route = found && routeOfRequest(worker, found.event);
  const escalated = route?.escalate_to ? await deps.approvals.escalated(workerId, requestId) : false;
  return { routing: { worker, route, escalated }, found };
}

/**
 * An "always" makes a rule from its request's tool and `pattern` (every input without one): the
 * pattern is capped like any rule, a `network` one must name `host:port`, and the rule must
 * cover the very request it is given on — a rule for other inputs is not what the person saw.
 */
async function checkRule(deps: Pick<DecisionsDeps, 'requests'>, workerId: string, requestId: string, pattern: string | undefined): Promise<void> {
  if (pattern !== undefined) checkRuleLimits(pattern, '/body/input_pattern');
  const request = await deps.requests.findRequest(workerId, requestId);
  if (!request) return;
  const { tool_name: toolName, input } = request.event.data;
  if (pattern !== undefined && toolName === EGRESS_TOOL) checkEgressPattern(pattern, '/body/input_pattern');
  // The gateway's tunnel and push decisions read their rules their own way (host:port, a ref), and ask a routed request whatever the rules say.
  if (toolName === EGRESS_TOOL || toolName === GIT_PUSH_TOOL) return;
  const rule = pattern === undefined ? toolName : `${toolName}(${pattern})`;
  if (!parseRequestRule(rule).matches(toolName, input, 'every'))
    throw new CodedError(
      'invalid_request',
      `/body/input_pattern: the rule ${rule} does not cover request ${requestId} itself; an "always" is given for what was asked`,
    );
}

/**
 * A person may answer a request with its input changed (`updated_input`), but not so that other
 * people would decide it (docs/teams.md): on a worker with approval routes the changed input must
 * take the route the request took, and a request needing a quorum is allowed as it was asked.
 */
function checkUpdatedInput(
  routing: { worker?: WorkerRecord | undefined; route?: ApprovalRoute | undefined },
  request: StoredEvent<'control_request'>,
  updated: Record<string, unknown>,
): void {
  if ((routing.route?.quorum ?? 1) > 1)
    throw new CodedError('invalid_request', `/body/updated_input: request ${request.data.request_id} needs a quorum; it is allowed or denied as it was asked`);
  const after = routeOf(routing.worker?.approvals, { tool_name: request.data.tool_name, input: updated })?.route;
  if (after?.match !== routing.route?.match)
    throw new CodedError(
      'invalid_request',
      `/body/updated_input: the changed input would be decided by ${after ? `the route ${after.match}` : "the session's approvers"}, not as the request was (${routing.route ? `the route ${routing.route.match}` : "the session's approvers"})`,
    );
}

/** A person's decision as stored: what they sent, with who they are. */
function personDecisionData(body: DecideRequestType['decision'], person: UserAssertion): EventData<'control_response'> {
  return {
    request_id: body.request_id,
    decision: body.decision,
    ...(body.decision === 'deny'
      ? { message: body.message?.trim() ? body.message : DEFAULT_DENY_MESSAGE }
      : body.message === undefined
        ? {}
        : { message: body.message }),
    ...(body.updated_input === undefined ? {} : { updated_input: body.updated_input }),
    ...(body.scope === undefined ? {} : { scope: body.scope }),
    ...(body.input_pattern === undefined ? {} : { input_pattern: body.input_pattern }),
    ...(body.interrupt === undefined ? {} : { interrupt: body.interrupt }),
    decided_by: person.sub,
    ...(person.name === undefined ? {} : { decided_by_name: person.name }),
    ...(person.email === undefined ? {} : { decided_by_email: person.email }),
  };
}

export type Decisions = ReturnType<typeof createDecisions>;
