import type { FastifyRequest } from 'fastify';
import { requestJson } from '@svc/bus';
import {
  ApprovalItemSchema,
  ApprovalsQuery,
  CodedError,
  ListResponse,
  ListRulesQuery,
  ListRulesResponse,
  RevokedRuleSchema,
  RuleParams,
  subjects,
  type ApprovalItem,
  type ApprovalsRpcType,
  type ListResponseOf,
  type ListRulesRpcType,
  type PermissionRule,
  type RevokeRuleRpcType,
} from '@svc/protocol';
import { channelOf } from './audit.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** `GET /v1/approvals` (the caller's inbox across workers) and `/v1/rules` (people's "always" rules at every scope): docs/teams.md, from the control service. */
export const approvalRoutes = routePlugin('svc-approval-routes', ['svc-bus'], async (app) => {
  app.get(
    '/v1/approvals',
    {
      schema: {
        tags: ['control'],
        summary: 'The requests waiting for your decision, across every worker, the nearest deadline first',
        description:
          "`for=me` (the default): a request routed to you or a group of yours (or, escalated, its `escalate_to`), and any other request of a worker you approve; admins get every open request. A routed one carries its rule, who may decide it, whether it was escalated, and a quorum's count.",
        querystring: ApprovalsQuery,
        response: { 200: ListResponse(ApprovalItemSchema), ...errorResponses(401, 403, 429, 503, 504) },
      },
    },
    async (request) => {
      const principal = request.principal;
      if (principal?.kind !== 'user') throw new CodedError('forbidden', "an inbox is a person's (a user token), not a worker's");
      const rpc: ApprovalsRpcType = { person: { sub: principal.sub, groups: [...principal.groups], admin: principal.admin } };
      return requestJson<ListResponseOf<ApprovalItem>>(app.bus, subjects.rpc.approvals, rpc, { requestId: request.id, retries: 1 });
    },
  );

  app.get(
    '/v1/rules',
    {
      schema: {
        tags: ['control'],
        summary: 'The rules people added with "always" that you may see, newest first (docs/teams.md, "Rules")',
        description:
          "A worker's or session's rules with the worker (404 to others), a template's to everyone, a team's to its members; admins see all. Filter by `scope`, `tool`, `worker_id`, or `q` (text in the tool, pattern, author or scope).",
        querystring: ListRulesQuery,
        response: { 200: ListRulesResponse, ...errorResponses(400, 401, 403, 429, 503, 504) },
      },
    },
    async (request) => {
      const rpc: ListRulesRpcType = { person: personOf(request), query: request.query };
      return requestJson<ListResponseOf<PermissionRule>>(app.bus, subjects.rpc.listRules, rpc, { requestId: request.id, retries: 1 });
    },
  );

  app.delete(
    '/v1/rules/:rule_id',
    {
      schema: {
        tags: ['control'],
        summary: 'Revoke a rule: no request is answered by it any more',
        description:
          'By who added it, an admin, or for its scope an approver of its worker (an operator for a template rule, a member for a team rule); 403 otherwise, 404 for a rule you may not see. Sidecars read it gone at their next read of the rules (at start, and after each "always" decision). Audited as `rule_revoked`.',
        params: RuleParams,
        response: { 200: RevokedRuleSchema, ...errorResponses(401, 403, 404, 429, 503, 504) },
      },
    },
    async (request) => {
      const rpc: RevokeRuleRpcType = { person: personOf(request), rule_id: request.params.rule_id, channel: channelOf(request) };
      return requestJson<{ revoked: true; rule: PermissionRule }>(app.bus, subjects.rpc.revokeRule, rpc, { requestId: request.id });
    },
  );
});

/** The person calling, as the control service's reads take them (a worker token may not). */
export function personOf(request: FastifyRequest): ApprovalsRpcType['person'] {
  const principal = request.principal;
  if (principal?.kind !== 'user') throw new CodedError('forbidden', "this is a person's (a user token), not a worker's");
  return { sub: principal.sub, groups: [...principal.groups], admin: principal.admin };
}
