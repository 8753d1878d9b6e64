import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { publishJson, requestJson, type NatsConnection } from '@svc/bus';
import {
  APIErrorSchema,
  CodedError,
  ControlRequestsQuery,
  ControlRequestsResponse,
  EVENT_LIST_LIMIT,
  isEndedStatus,
  PendingControlQuery,
  PendingControlResponse,
  PermissionRulesResponse,
  PostControlBody,
  PostControlResponse,
  subjects,
  WorkerParams,
  type DecideRequestType,
  type ListEventsResultType,
  type ListResponseOf,
  type PermissionRule,
  type StoredEvent,
} from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import type { WorkerDirectory } from '../auth/worker-directory.js';
import { listStoredEvents } from '../event-queries.js';
import { decisionsProvenAfter } from '../proven-decisions.js';
import type { LiveFeeds } from '../live-feeds.js';

export interface ControlRoutesOptions {
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
}

const userErrors = { 400: APIErrorSchema, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 409: APIErrorSchema, 429: APIErrorSchema };

/**
 * The control channel: a person's decision (`POST …/control`), the sidecar's poll for decisions
 * (`GET …/control/pending`, a long poll with `wait_ms`), the open requests for late joiners, and
 * the rules added with "always". Decisions are stored by the control service.
 */
export const controlRoutes: FastifyPluginAsyncTypebox<ControlRoutesOptions> = async (app, { nc, workers, live }) => {
  app.post(
    '/v1/workers/:id/control',
    {
      schema: {
        tags: ['control'],
        summary: 'Decide on a control request (first decision wins)',
        description:
          'Answered 201 with the stored `control_response`. 404 `worker_not_found` (also when you may not steer it), 409 `worker_ended`, 404 `request_not_found`, 409 `already_decided` (naming who and when), 409 `request_closed` (withdrawn or expired). A deny without a message gets a default one.',
        params: WorkerParams,
        body: PostControlBody,
        response: { 201: PostControlResponse, ...userErrors, 503: APIErrorSchema, 504: APIErrorSchema },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const record = await authorizeWorker(request, workers, workerId);
      if (isEndedStatus(record.status)) throw new CodedError('worker_ended', `worker ${workerId} is ${record.status}; it takes no more decisions`);
      const principal = request.principal!;
      if (principal.kind !== 'user') throw new CodedError('forbidden', 'decisions are made by people');
      const decide: DecideRequestType = {
        worker_id: workerId,
        decision: request.body,
        decided_by: { sub: principal.sub, ...(principal.name ? { name: principal.name } : {}), ...(principal.email ? { email: principal.email } : {}) },
      };
      const stored = await requestJson<StoredEvent<'control_response'>>(nc, subjects.rpc.decide, decide, { requestId: request.id });
      return reply.code(201).send(stored);
    },
  );

  app.get(
    '/v1/workers/:id/control/pending',
    {
      config: { auth: 'worker' },
      schema: {
        tags: ['control'],
        summary: 'Decisions after a cursor (the sidecar polls; wait_ms makes it a long poll)',
        description: `The \`control_response\` events after \`after_id\`, in id order. With \`wait_ms\` the answer comes as soon as one is stored, or empty at the deadline. Every poll records the sidecar as alive. \`total\` is the number of the worker's decisions. Default \`limit\` ${EVENT_LIST_LIMIT.default}.`,
        params: WorkerParams,
        querystring: PendingControlQuery,
        response: { 200: PendingControlResponse, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 409: APIErrorSchema, 429: APIErrorSchema },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const afterId = request.query.after_id ?? '0';
      publishJson(nc, subjects.workerAlive(workerId), { worker_id: workerId, at: new Date().toISOString() });
      const query = { worker_id: workerId, after_id: afterId, limit: request.query.limit, types: ['control_response' as const] };
      const listPage = (withLastId: boolean) => listStoredEvents(nc, { ...query, ...(withLastId ? { with_last_id: true } : {}) }, request.id);
      const answer = ({ items, total }: ListEventsResultType) => ({ items, total });

      const deadline = Date.now() + (request.query.wait_ms ?? 0);
      // Every event announced since watching began (any type: their ids prove what was missed).
      const announced: StoredEvent[] = [];
      let decisionAnnounced = false;
      let wake: (() => void) | undefined;
      const cursor = BigInt(afterId);
      const stopWatching = live.watch(workerId, (event) => {
        announced.push(event);
        if (event.type !== 'control_response' || BigInt(event.id) <= cursor) return;
        decisionAnnounced = true;
        wake?.();
      });
      // A client that hangs up ends the wait (the connection closes under the response).
      const hungUp = () => wake?.();
      reply.raw.once('close', hungUp);
      try {
        // Watching started before this read, so a decision stored meanwhile is in it or announced.
        const page = await listPage(true);
        const remaining = deadline - Date.now();
        if (page.items.length > 0 || remaining <= 0) return answer(page);
        if (!decisionAnnounced) {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, remaining);
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
        }
        if (request.raw.socket?.destroyed) return answer(page);
        // Answered from the announcements when their ids follow the head without a gap; else
        // the store, which has every decision after the cursor (the cursor must skip none).
        const proven = decisionsProvenAfter(announced, page.last_id ?? '0', afterId);
        if (page.last_id !== undefined && proven.items.length > 0) {
          return { items: proven.items.slice(0, request.query.limit), total: page.total + proven.decisionsAfterHead };
        }
        return answer(await listPage(false));
      } finally {
        stopWatching();
        reply.raw.off('close', hungUp);
      }
    },
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
      await authorizeWorker(request, workers, workerId);
      return requestJson<ListResponseOf<StoredEvent<'control_request'>>>(nc, subjects.rpc.controlRequests, { worker_id: workerId, state: request.query.state ?? 'open' }, { requestId: request.id, retries: 1 });
    },
  );

  app.get(
    '/v1/workers/:id/permission-rules',
    {
      config: { auth: 'worker' },
      schema: {
        tags: ['control'],
        summary: 'The rules people added with scope "always" (the sidecar applies them)',
        params: WorkerParams,
        response: { 200: PermissionRulesResponse, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 409: APIErrorSchema, 429: APIErrorSchema },
      },
    },
    async (request) => requestJson<ListResponseOf<PermissionRule>>(nc, subjects.rpc.permissionRules, { worker_id: request.params.id }, { requestId: request.id, retries: 1 }),
  );
};
