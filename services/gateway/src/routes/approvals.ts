import { requestJson } from '@svc/bus';
import {
  ApprovalItemSchema,
  ApprovalsQuery,
  CodedError,
  ListResponse,
  subjects,
  type ApprovalItem,
  type ApprovalsRpcType,
  type ListResponseOf,
} from '@svc/protocol';
import { errorResponses, routePlugin } from './route-plugin.js';

/** `GET /v1/approvals`: the caller's inbox across workers (docs/teams.md), from the control service. */
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
});
