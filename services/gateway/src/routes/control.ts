import type { FastifyInstance, FastifyRequest } from 'fastify';
import { signUserAssertion } from '@svc/auth';
import { requestJson } from '@svc/bus';
import { decisionAnswerWithinMs } from '@svc/service-kit';
import {
  ApprovalVoteAnswerSchema,
  CodedError,
  ControlRequestsQuery,
  ControlRequestsResponse,
  EVENT_LIST_LIMIT,
  isEndedStatus,
  isVoteAnswer,
  PendingControlQuery,
  PendingControlResponse,
  PermissionRulesResponse,
  PostControlBody,
  PostControlResponse,
  subjects,
  WorkerParams,
  type DecideAnswer,
  type DecideRequestType,
  type ListResponseOf,
  type PermissionRule,
  type PersonChannel,
  type PostControlBodyType,
  type StoredEvent,
} from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { createAgentInputFeeds } from '../agent-input-feeds.js';
import { channelOf } from './audit.js';
import { createPendingInputs } from './pending-inputs.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/**
 * A person's decision on a request of `workerId`'s: who may make it is checked here, and signed
 * for the control service, which stores it (the first decision wins).
 */
async function decide(app: FastifyInstance, request: FastifyRequest, workerId: string, decision: PostControlBodyType): Promise<DecideAnswer> {
  const record = await authorizeWorker(request, app.workers, workerId);
  if (isEndedStatus(record.status)) throw new CodedError('worker_ended', `worker ${workerId} is ${record.status}; it takes no more decisions`);
  const principal = request.principal!;
  if (principal.kind !== 'user') throw new CodedError('forbidden', 'decisions are made by people');
  const { userAssertionKey } = app.settings;
  if (!userAssertionKey) throw new CodedError('unavailable', 'this gateway cannot vouch for who decides (SVC_USER_ASSERTION_KEY is not set): ask its operator');
  // The control service takes who decided from this signed assertion only, never from the payload.
  const assertion = await signUserAssertion(userAssertionKey, {
    sub: principal.sub,
    name: principal.name || undefined,
    email: principal.email || undefined,
    groups: principal.groups,
    admin: principal.admin,
    // `channelOf` names only the channels a person's client uses (api, cli, console).
    channel: channelOf(request) as PersonChannel,
    workerId,
    requestId: decision.request_id,
  });
  // A sidecar polling any gateway hears it from event-ingest, which announces it once stored.
  return decideThroughControl(app, { worker_id: workerId, decision, assertion }, request.id);
}

/**
 * Asks the control service to take a person's decision, waiting as long as it may take to store
 * it (its writer away): a decision stored late is still this person's 201, not a 504.
 */
export function decideThroughControl(app: FastifyInstance, rpc: DecideRequestType, requestId: string): Promise<DecideAnswer> {
  return requestJson<DecideAnswer>(app.bus, subjects.rpc.decide, rpc, { requestId, timeoutMs: decisionAnswerWithinMs(app.settings) });
}

const userErrors = errorResponses(400, 401, 403, 404, 409, 429);

/**
 * The control channel: a person's decision (`POST …/control`), the sidecar's poll for decisions
 * (`GET …/control/pending`, a long poll with `wait_ms`), the open requests for late joiners, and
 * the rules added with "always". Decisions are stored by the control service.
 */
export const controlRoutes = routePlugin(
  'svc-control-routes',
  ['svc-settings', 'svc-bus', 'svc-worker-directory', 'svc-live-feeds', 'svc-followers'],
  async (app) => {
    // People's decisions carry an assertion of who decides, signed with this key (docs/nats-security.md).
    if (!app.settings.userAssertionKey) app.log.warn("SVC_USER_ASSERTION_KEY is not set: people's decisions are refused (503) until it is");
    const agentInputs = createAgentInputFeeds(app.bus, app.liveFeeds, { stats: app.followers });
    const pendingInputs = createPendingInputs(app, agentInputs);
    app.post(
      '/v1/workers/:id/control',
      {
        schema: {
          tags: ['control'],
          summary: 'Decide on a control request (first decision wins)',
          description:
            "Answered 201 with the stored `control_response`, or 202 with a vote when the request's approval route asks a quorum that this allow does not complete yet (docs/teams.md). 404 `worker_not_found` (also when you may not see it), 403 `role_required` (not an approver) or `not_a_decider` (routed to others: the message names them), 409 `worker_ended`, 404 `request_not_found`, 409 `already_decided` (naming who and when), 409 `request_closed` (withdrawn or expired). A deny without a message gets a default one.",
          params: WorkerParams,
          body: PostControlBody,
          response: { 201: PostControlResponse, 202: ApprovalVoteAnswerSchema, ...userErrors, ...errorResponses(503, 504) },
        },
      },
      async (request, reply) => {
        const answer = await decide(app, request, request.params.id, request.body);
        return reply.code(isVoteAnswer(answer) ? 202 : 201).send(answer);
      },
    );

    app.get(
      '/v1/workers/:id/control/pending',
      {
        config: { auth: 'worker' },
        schema: {
          tags: ['control'],
          summary: "Decisions and people's messages after a cursor (the sidecar polls; wait_ms makes it a long poll)",
          description: `What the agent is to be handed, after \`after_id\`, in id order: the \`control_response\` events (decisions) and people's messages (\`system\` events of subtype \`person_message\`, docs/conversations.md). With \`wait_ms\` the answer comes as soon as one is stored, or empty at the deadline; 429 \`too_many_long_polls\` (with Retry-After) past the long polls one worker may hold open. Every poll records the sidecar as alive. \`total\` is the number of the worker's decisions and messages. Default \`limit\` ${EVENT_LIST_LIMIT.default}.`,
          params: WorkerParams,
          querystring: PendingControlQuery,
          response: { 200: PendingControlResponse, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      pendingInputs,
    );

    app.get(
      '/v1/workers/:id/control/requests',
      {
        schema: {
          tags: ['control'],
          summary: 'Control requests by state (open: what a viewer joining now must answer)',
          params: WorkerParams,
          querystring: ControlRequestsQuery,
          response: { 200: ControlRequestsResponse, ...userErrors },
        },
      },
      async (request) => {
        const workerId = request.params.id;
        await authorizeWorker(request, app.workers, workerId);
        return requestJson<ListResponseOf<StoredEvent<'control_request'>>>(
          app.bus,
          subjects.rpc.controlRequests,
          { worker_id: workerId, state: request.query.state ?? 'open' },
          { requestId: request.id, retries: 1 },
        );
      },
    );

    app.get(
      '/v1/workers/:id/permission-rules',
      {
        config: { auth: 'worker-or-user' },
        schema: {
          tags: ['control'],
          summary: 'The rules people added with scope "always": the sidecar applies them, the worker\'s owner may list them',
          params: WorkerParams,
          response: { 200: PermissionRulesResponse, ...errorResponses(401, 403, 404, 409, 429) },
        },
      },
      async (request) => {
        await authorizeWorker(request, app.workers, request.params.id);
        return requestJson<ListResponseOf<PermissionRule>>(
          app.bus,
          subjects.rpc.permissionRules,
          { worker_id: request.params.id },
          { requestId: request.id, retries: 1 },
        );
      },
    );
  },
);
