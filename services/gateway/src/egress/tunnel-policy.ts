import { randomUUID } from 'node:crypto';
import { requestJson, type NatsConnection } from '@svc/bus';
import {
  controlWithdrawnData,
  DEFAULT_DECISION_TIMEOUT_S,
  EGRESS_TOOL,
  parseSource,
  POLICY_SOURCE,
  subjects,
  type EgressRequestInput,
  type EgressTarget,
  type EventData,
  type ListResponseOf,
  type PermissionRule,
  type StoredEvent,
  type WorkerRecord,
} from '@svc/protocol';
import type { OutboundAddressCheck } from '@svc/service-kit';
import type { LiveFeeds } from '../live-feeds.js';
import { peopleVerdict, resolvedTarget, templateVerdict, type ResolvedTarget, type Verdict } from './egress-rules.js';
import type { TunnelRecords } from './tunnel-records.js';

/** How long past the worker's decision deadline a tunnel still waits (the control service decides at the deadline). */
const DEADLINE_SLACK_MS = 30_000;

/** A tunnel refused before anyone decides, and the status its CONNECT is answered with. */
export interface TunnelRefusal {
  status: number;
  reason: string;
}

/**
 * Resolves the asked target once and refuses what no rule may open: the control plane's own
 * endpoints (`403`), a name that does not resolve (`502`), a host that is none (`400`). The
 * tunnel is weighed on, and made to, the addresses found here: a name cannot be re-pointed in
 * between, and no spelling of an address escapes a rule about it.
 */
export async function resolveTunnelTarget(
  addresses: OutboundAddressCheck,
  asked: EgressTarget,
): Promise<{ target: ResolvedTarget } | { refusal: TunnelRefusal }> {
  const inspection = await addresses.inspect(asked.host, asked.port);
  if (!inspection.resolved) {
    const status = inspection.refusal === 'unresolved' ? 502 : inspection.refusal === 'invalid-host' ? 400 : 403;
    return { refusal: { status, reason: inspection.reason } };
  }
  return { target: resolvedTarget(asked.port, inspection) };
}

export interface TunnelPolicy {
  /**
   * Decides a resolved tunnel of a worker with egress: the template, then the rules people added
   * with "always", then the autonomous policy at once or a person (`gone` aborts when the agent
   * closes the connection first).
   */
  decide(worker: WorkerRecord, target: ResolvedTarget, gone: AbortSignal): Promise<Verdict>;
}

interface PolicyDeps {
  nc: NatsConnection;
  live: LiveFeeds;
  records: TunnelRecords;
}

export function createTunnelPolicy(deps: PolicyDeps): TunnelPolicy {
  return {
    async decide(worker, target, gone) {
      const policy = worker.egress!;
      const byTemplate = templateVerdict(policy, target);
      if (byTemplate) return byTemplate;
      const rules = await requestJson<ListResponseOf<PermissionRule>>(deps.nc, subjects.rpc.permissionRules, { worker_id: worker.worker_id }, { retries: 1 });
      const byPeople = peopleVerdict(rules.items, target);
      if (byPeople) return byPeople;
      const request = networkRequest(target);
      return policy.autonomous ? allowAutonomously(deps.records, worker.worker_id, request) : askPerson(deps, worker, request, gone);
    },
  };
}

/**
 * Asked like a tool call: the history shows the request, whoever answers it, and the person sees
 * the addresses the tunnel would really reach.
 */
function networkRequest(target: ResolvedTarget): EventData<'control_request'> {
  const input: EgressRequestInput = {
    target: target.target,
    host: target.host,
    port: target.port,
    addresses: target.addresses.map(({ address }) => address),
  };
  return { request_id: `net_${randomUUID()}`, tool_name: EGRESS_TOOL, input: { ...input } };
}

/** The autonomous policy's answer, recorded with the request as for a tool call. */
async function allowAutonomously(records: TunnelRecords, workerId: string, request: EventData<'control_request'>): Promise<Verdict> {
  const requestId = request.request_id;
  const data: EventData<'control_response'> = {
    request_id: requestId,
    decision: 'allow',
    message: 'autonomous: what is not denied is allowed',
    decided_by: 'policy',
  };
  await records.record(workerId, { type: 'control_request', uid: `egress:${requestId}:request`, data: request });
  await records.record(workerId, { type: 'control_response', uid: `egress:${requestId}:decision`, data }, POLICY_SOURCE);
  return { allow: true, by: 'policy', reason: data.message! };
}

/** Stores the request and holds the tunnel until a person (or the deadline's policy) decides, or the agent gives up. */
async function askPerson(deps: PolicyDeps, worker: WorkerRecord, request: EventData<'control_request'>, gone: AbortSignal): Promise<Verdict> {
  const requestId = request.request_id;
  const deadlineMs = (worker.decision_policy?.decision_timeout_s ?? DEFAULT_DECISION_TIMEOUT_S) * 1000 + DEADLINE_SLACK_MS;
  // Watched before the request is stored, so a decision that follows at once is not missed.
  const decided = awaitDecision(deps.live, worker.worker_id, requestId, deadlineMs, gone);
  await deps.records.record(worker.worker_id, { type: 'control_request', uid: `egress:${requestId}:request`, data: request });
  const decisionEvent = await decided;
  if (!decisionEvent) {
    // The agent gave up (or nobody decided, not even the deadline's policy): the request goes.
    await deps.records.record(worker.worker_id, { type: 'system', uid: `egress:${requestId}:withdrawn`, data: controlWithdrawnData(requestId) });
    return { allow: false, by: 'policy', reason: gone.aborted ? 'the agent closed the connection before a decision' : 'no decision before the deadline' };
  }
  // Who decided is the stored event's source (a person's, or the deadline's policy), not a name in its data.
  const { data, source } = decisionEvent;
  const decider = parseSource(source);
  const by = decider.kind === 'person' ? decider.sub : data.decided_by;
  return { allow: data.decision === 'allow', by, reason: data.message ?? `${data.decision === 'allow' ? 'allowed' : 'denied'} by ${by}` };
}

/** Waits for the decision on `requestId` (announced as the worker's events are stored). */
function awaitDecision(
  live: LiveFeeds,
  workerId: string,
  requestId: string,
  timeoutMs: number,
  gone: AbortSignal,
): Promise<StoredEvent<'control_response'> | undefined> {
  return new Promise((resolve) => {
    const finish = (value: StoredEvent<'control_response'> | undefined) => {
      stop();
      clearTimeout(timer);
      gone.removeEventListener('abort', onGone);
      resolve(value);
    };
    const stop = live.watch(workerId, (event) => {
      // A person's decision or the deadline's: a worker's own "policy" answer to a tunnel request is no decision.
      if (event.type !== 'control_response' || (event.data as EventData<'control_response'>).request_id !== requestId) return;
      const decider = parseSource(event.source).kind;
      if (decider === 'person' || decider === 'policy') finish(event as StoredEvent<'control_response'>);
    });
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const onGone = () => finish(undefined);
    gone.addEventListener('abort', onGone);
  });
}
