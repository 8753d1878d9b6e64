import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import {
  ApprovalsRpc,
  ControlRequestsRpc,
  isVoteAnswer,
  createChecker,
  DecideRequest,
  GetWorkerRequest,
  ListRulesRpc,
  PolicyReplayRpc,
  PolicySuggestionsRpc,
  RevokeRuleRpc,
  subjects,
  type ApprovalItem,
  type ApprovalsRpcType,
  type ControlRequestsRpcType,
  type DecideAnswer,
  type DecideRequestType,
  type ListResponseOf,
  type ListRulesRpcType,
  type PolicyReplay,
  type PolicyReplayRpcType,
  type PolicySuggestion,
  type PolicySuggestionsRpcType,
  type RevokeRuleRpcType,
  type PermissionRule,
  type StoredEvent,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { ControlRequestLog } from '@svc/store';
import type { Inbox } from './approvals/inbox.js';
import type { Rules } from './approvals/rules.js';
import type { Policy } from './policy/policy.js';
import type { Deadlines } from './deadlines.js';
import type { Decisions } from './decisions.js';

export interface ControlRpcsDeps {
  nc: NatsConnection;
  decisions: Decisions;
  deadlines: Deadlines;
  requests: Pick<ControlRequestLog, 'listRequests'>;
  /** People's "always" rules at every scope (docs/teams.md, "Rules"). */
  rules: Rules;
  /** Suggestions and replay from the decision log (docs/policy.md). */
  policy: Policy;
  /** What waits for a person across the workers (`GET /v1/approvals`). */
  inbox: Inbox;
  logger: Logger;
  queue: string;
}

/** The control service's requests: a person's decision, a worker's control requests, its permission rules. */
export function serveControlRpcs(deps: ControlRpcsDeps): Subscription[] {
  const { nc, logger, queue } = deps;
  return [
    // Who decides is the user assertion's to say, checked by `decide` before anything else.
    serveRpc<DecideRequestType, DecideAnswer>(
      nc,
      subjects.rpc.decide,
      async (request) => {
        const decided = await deps.decisions.decide(request);
        // A vote toward a quorum closes nothing: the request stays open.
        if (!isVoteAnswer(decided)) deps.deadlines.cancel(request.worker_id, request.decision.request_id);
        return decided;
      },
      { logger, queue, checker: createChecker(DecideRequest) },
    ),
    serveRpc<ApprovalsRpcType, ListResponseOf<ApprovalItem>>(nc, subjects.rpc.approvals, (request) => deps.inbox.of(request.person), {
      logger,
      queue,
      checker: createChecker(ApprovalsRpc),
    }),
    serveRpc<ControlRequestsRpcType, ListResponseOf<StoredEvent<'control_request'>>>(
      nc,
      subjects.rpc.controlRequests,
      async (request) => {
        const items = (await deps.requests.listRequests(request.worker_id, request.state)).map((r) => r.event);
        return { items, total: items.length };
      },
      { logger, queue, checker: createChecker(ControlRequestsRpc) },
    ),
    serveRpc<{ worker_id: string }, ListResponseOf<PermissionRule>>(nc, subjects.rpc.permissionRules, (request) => deps.rules.ofWorker(request.worker_id), {
      logger,
      queue,
      checker: createChecker(GetWorkerRequest),
    }),
    serveRpc<ListRulesRpcType, ListResponseOf<PermissionRule>>(nc, subjects.rpc.listRules, (request) => deps.rules.list(request), {
      logger,
      queue,
      checker: createChecker(ListRulesRpc),
    }),
    serveRpc<PolicySuggestionsRpcType, ListResponseOf<PolicySuggestion>>(nc, subjects.rpc.policySuggestions, (request) => deps.policy.suggestions(request), {
      logger,
      queue,
      checker: createChecker(PolicySuggestionsRpc),
    }),
    serveRpc<PolicyReplayRpcType, PolicyReplay>(nc, subjects.rpc.policyReplay, (request) => deps.policy.replay(request), {
      logger,
      queue,
      checker: createChecker(PolicyReplayRpc),
    }),
    serveRpc<RevokeRuleRpcType, { revoked: true; rule: PermissionRule }>(nc, subjects.rpc.revokeRule, (request) => deps.rules.revoke(request), {
      logger,
      queue,
      checker: createChecker(RevokeRuleRpc),
    }),
  ];
}
