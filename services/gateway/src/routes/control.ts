import { signUserAssertion, type WorkerDirectory } from '@svc/auth';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listStoredEvents, publishJson, requestJson, type NatsConnection } from '@svc/bus';
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
  type FollowerStats,
  type ListResponseOf,
  type PermissionRule,
  type PersonChannel,
  type StoredEvent,
} from '@svc/protocol';
import { gauge } from '@svc/service-kit';
import { authorizeWorker } from '../auth/authorization.js';
import { channelOf } from './audit.js';
import { createDecisionFeeds, type DecisionPage } from '../decision-feeds.js';
import type { LiveFeeds } from '../live-feeds.js';
import { createConcurrencyCap } from '../stream-limits.js';

export interface ControlRoutesOptions {
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
  followers: FollowerStats;
  /** Long polls one worker may hold open on this gateway (`SVC_MAX_LONG_POLLS_PER_WORKER`). */
  maxLongPollsPerWorker: number;
  /** Signs who decides for the control service (`SVC_USER_ASSERTION_KEY`); unset: decisions are refused. */
  userAssertionKey: string | undefined;
}

/**
 * Every poll says the sidecar is alive, but the session service records it at most every 10 s
 * and a sidecar polls again the moment it is answered: one message per worker every 1–2 s is
 * plenty. (Two generations of "reported" sets keep memory to the workers polling lately.)
 */
function createAliveReporter(nc: NatsConnection, windowMs = 1000): (workerId: string) => void {
  let current = new Set<string>();
  let previous = new Set<string>();
  let windowStart = Date.now();
  return (workerId) => {
    const now = Date.now();
    if (now - windowStart >= windowMs) {
      previous = now - windowStart >= 2 * windowMs ? new Set() : current;
      current = new Set();
      windowStart = now;
    }
    if (current.has(workerId) || previous.has(workerId)) return;
    current.add(workerId);
    publishJson(nc, subjects.workerAlive(workerId), { worker_id: workerId, at: new Date(now).toISOString() });
  };
}

const longPolls = gauge({
  name: 'svc_long_polls_in_flight',
  help: 'Sidecar long polls for decisions (GET …/control/pending with wait_ms) this gateway holds open.',
});

const userErrors = { 400: APIErrorSchema, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 409: APIErrorSchema, 429: APIErrorSchema };

/**
 * The control channel: a person's decision (`POST …/control`), the sidecar's poll for decisions
 * (`GET …/control/pending`, a long poll with `wait_ms`), the open requests for late joiners, and
 * the rules added with "always". Decisions are stored by the control service.
 */
export const controlRoutes: FastifyPluginAsyncTypebox<ControlRoutesOptions> = async (
  app,
  { nc, workers, live, followers, maxLongPollsPerWorker, userAssertionKey },
) => {
  const decisions = createDecisionFeeds(nc, live, { stats: followers });
  const reportAlive = createAliveReporter(nc);
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
      if (!userAssertionKey)
        throw new CodedError('unavailable', 'this gateway cannot vouch for who decides (SVC_USER_ASSERTION_KEY is not set): ask its operator');
      // The control service takes who decided from this signed assertion only, never from the payload.
      const assertion = await signUserAssertion(userAssertionKey, {
        sub: principal.sub,
        name: principal.name || undefined,
        email: principal.email || undefined,
        admin: principal.admin,
        // `channelOf` names only the channels a person's client uses (api, cli, console).
        channel: channelOf(request) as PersonChannel,
        workerId,
        requestId: request.body.request_id,
      });
      const decide: DecideRequestType = { worker_id: workerId, decision: request.body, assertion };
      const stored = await requestJson<StoredEvent<'control_response'>>(nc, subjects.rpc.decide, decide, { requestId: request.id });
      // A sidecar polling this gateway need not wait for the announcement (one more hop, through
      // event-ingest) when the decision follows on from what its log has; else the announcement brings it.
      decisions.decided(stored);
      return reply.code(201).send(stored);
    },
  );

  // A sidecar holds one long poll at a time: a few more cover a restart's overlap, not a flood.
  const longPollsPerWorker = createConcurrencyCap(maxLongPollsPerWorker);
  app.get(
    '/v1/workers/:id/control/pending',
    {
      config: { auth: 'worker' },
      schema: {
        tags: ['control'],
        summary: 'Decisions after a cursor (the sidecar polls; wait_ms makes it a long poll)',
        description: `The \`control_response\` events after \`after_id\`, in id order. With \`wait_ms\` the answer comes as soon as one is stored, or empty at the deadline; 429 \`too_many_long_polls\` (with Retry-After) past the long polls one worker may hold open. Every poll records the sidecar as alive. \`total\` is the number of the worker's decisions. Default \`limit\` ${EVENT_LIST_LIMIT.default}.`,
        params: WorkerParams,
        querystring: PendingControlQuery,
        response: { 200: PendingControlResponse, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 409: APIErrorSchema, 429: APIErrorSchema },
      },
    },
    async (request, reply) => {
      const workerId = request.params.id;
      const afterId = request.query.after_id ?? '0';
      reportAlive(workerId);
      const limit = request.query.limit ?? EVENT_LIST_LIMIT.default;
      const query = { worker_id: workerId, after_id: afterId, limit, types: ['control_response' as const], with_last_id: true };
      const deadline = Date.now() + (request.query.wait_ms ?? 0);

      const releaseLongPoll = request.query.wait_ms ? longPollsPerWorker.claim(workerId) : () => {};
      if (!releaseLongPoll) {
        throw new CodedError(
          'too_many_long_polls',
          `worker ${workerId} already holds ${longPollsPerWorker.max} long polls on this gateway, the most one worker may; poll again once one is answered`,
        );
      }
      let feed: ReturnType<typeof decisions.open>;
      try {
        feed = decisions.open(workerId);
      } catch (err) {
        releaseLongPoll();
        throw err;
      }
      longPolls.inc();
      // The store's page also tells the log where the worker's head is; announcements heard
      // meanwhile (the feed watched before the read) may prove more than the page holds.
      const readStore = async (): Promise<DecisionPage> => {
        const page = await listStoredEvents(nc, query, { requestId: request.id });
        feed.log.seeded(afterId, page, limit);
        return page.items.length > 0 ? { items: page.items, total: page.total } : (feed.log.after(afterId, limit) ?? { items: [], total: page.total });
      };
      try {
        // A long poll may start from what the log proves (a consistent prefix: the rest follows
        // in the next poll); a plain poll reads the store, so a decision answered 201 a moment
        // ago is in it even if its announcement is still on the way.
        const known = (request.query.wait_ms ? feed.log.after(afterId, limit) : undefined) ?? (await readStore());
        const remaining = deadline - Date.now();
        if (known.items.length > 0 || remaining <= 0) return known;
        const decided = await feed.nextDecision(afterId, remaining, reply.raw);
        if (request.raw.socket?.destroyed) return known;
        const proven = decided ? feed.log.after(afterId, limit) : undefined;
        // Nothing proven: an announcement is missing (or none came by the deadline; one may be
        // lost), and the store has every decision after the cursor.
        return proven && proven.items.length > 0 ? proven : await readStore();
      } finally {
        longPolls.dec();
        feed.release();
        releaseLongPoll();
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
      return requestJson<ListResponseOf<StoredEvent<'control_request'>>>(
        nc,
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
        response: { 200: PermissionRulesResponse, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 409: APIErrorSchema, 429: APIErrorSchema },
      },
    },
    async (request) => {
      await authorizeWorker(request, workers, request.params.id);
      return requestJson<ListResponseOf<PermissionRule>>(
        nc,
        subjects.rpc.permissionRules,
        { worker_id: request.params.id },
        { requestId: request.id, retries: 1 },
      );
    },
  );
};
