import { randomUUID } from 'node:crypto';
import { requestJson, type NatsConnection } from '@svc/bus';
import {
  EGRESS_TOOL,
  subjects,
  type EgressRequestInput,
  type EgressTarget,
  type EventData,
  type ListResponseOf,
  type PermissionRule,
  type WorkerRecord,
  routeOf,
} from '@svc/protocol';
import type { OutboundAddressCheck } from '@svc/service-kit';
import type { LiveFeeds } from '../live-feeds.js';
import { allowAutonomously, askPerson, type ComponentRecords, type Verdict } from '../raised-requests.js';
import { peopleVerdict, resolvedTarget, templateVerdict, type ResolvedTarget } from './egress-rules.js';

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
  records: ComponentRecords;
}

export function createTunnelPolicy(deps: PolicyDeps): TunnelPolicy {
  return {
    async decide(worker, target, gone) {
      const policy = worker.egress!;
      const byTemplate = templateVerdict(policy, target);
      if (byTemplate) return byTemplate;
      const request = networkRequest(target);
      // A routed request (docs/teams.md) is the route's people's to decide: no one's "always", no autonomy.
      if (routeOf(worker.approvals, request)) return askPerson(deps, worker, request, gone);
      const rules = await requestJson<ListResponseOf<PermissionRule>>(deps.nc, subjects.rpc.permissionRules, { worker_id: worker.worker_id }, { retries: 1 });
      const byPeople = peopleVerdict(rules.items, target);
      if (byPeople) return byPeople;
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
