import { requestJson } from '@svc/bus';
import {
  PolicyReplayBody,
  PolicyReplayResponse,
  PolicySuggestionsQuery,
  PolicySuggestionsResponse,
  subjects,
  type ListResponseOf,
  type PolicyReplay,
  type PolicyReplayRpcType,
  type PolicySuggestion,
  type PolicySuggestionsRpcType,
} from '@svc/protocol';
import { personOf } from './approvals.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** Replaying reads up to 5,000 requests and decides each: more than a quick query's time. */
const REPLAY_TIMEOUT_MS = 30_000;

/** `/v1/policy/*`: the policy learned from the decision log (docs/policy.md), computed by the control service. */
export const policyRoutes = routePlugin('svc-policy-routes', ['svc-bus'], async (app) => {
  app.get(
    '/v1/policy/suggestions',
    {
      schema: {
        tags: ['control'],
        summary: "Rules proposed from people's decisions on a template's requests, each with its evidence",
        description:
          'Over the newest `last` requests of the sessions of `template` you may see (admins: all). An exact request allowed at least `min_evidence` times and never denied → `auto_approve`; a family of commands (one first word) allowed that often over several commands and never denied → `auto_approve`; a family denied in 90% or more → `deny`.',
        querystring: PolicySuggestionsQuery,
        response: { 200: PolicySuggestionsResponse, ...errorResponses(400, 401, 403, 429, 503, 504) },
      },
    },
    async (request) => {
      const rpc: PolicySuggestionsRpcType = { person: personOf(request), query: request.query };
      return requestJson<ListResponseOf<PolicySuggestion>>(app.bus, subjects.rpc.policySuggestions, rpc, {
        requestId: request.id,
        timeoutMs: REPLAY_TIMEOUT_MS,
      });
    },
  );

  app.post(
    '/v1/policy/replay',
    {
      schema: {
        tags: ['control'],
        summary: "Run a candidate policy over the last requests of a template's sessions: what it would have done beside what people did",
        description:
          'The candidate is a template\'s `[sidecar]` lists (`auto_approve`, `deny`, `ask`, `autonomous`) and `rules` as people\'s "always" add them, decided as the sidecar decides. `counts` says how often it agrees with people, lets through what a person denied, blocks what a person allowed, spares a question, or still asks.',
        body: PolicyReplayBody,
        response: { 200: PolicyReplayResponse, ...errorResponses(400, 401, 403, 429, 503, 504) },
      },
    },
    async (request) => {
      const rpc: PolicyReplayRpcType = { person: personOf(request), body: request.body };
      return requestJson<PolicyReplay>(app.bus, subjects.rpc.policyReplay, rpc, { requestId: request.id, timeoutMs: REPLAY_TIMEOUT_MS });
    },
  );
});
