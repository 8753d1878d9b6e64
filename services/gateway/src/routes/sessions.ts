import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { publishJson, requestJson, type NatsConnection } from '@svc/bus';
import {
  APIErrorSchema,
  CodedError,
  CreateSessionBody,
  ListSessionsQuery,
  ListSessionsResponse,
  ListTemplatesResponse,
  SessionLogsQuery,
  SessionParams,
  SessionSchema,
  subjects,
  type CreateSessionRpcType,
  type FollowLogsRpcType,
  type ListResponseOf,
  type ListSessionsRpcType,
  type ListTemplatesRpcType,
  type Session,
  type SessionLogMessageType,
  type TemplateSummary,
  type SessionRpcType,
  type ViewerType,
} from '@svc/protocol';
import { channelOf } from './audit.js';
import type { OpenStreams } from './event-stream.js';

export interface SessionRoutesOptions {
  nc: NatsConnection;
  streams: OpenStreams;
}

const userErrors = {
  400: APIErrorSchema,
  401: APIErrorSchema,
  403: APIErrorSchema,
  404: APIErrorSchema,
  429: APIErrorSchema,
  503: APIErrorSchema,
  504: APIErrorSchema,
};

/** Deleting waits for the sandbox's programs to stop (their grace period), so it may take a while. */
const DELETE_TIMEOUT_MS = 60_000;
/** A log follower tells the session service it is still there this often. */
const LOG_KEEPALIVE_INTERVAL_MS = 10_000;

function viewerOf(request: FastifyRequest): ViewerType {
  const principal = request.principal;
  if (principal?.kind !== 'user') throw new CodedError('forbidden', 'sessions are for people (a user token), not for workers');
  return { sub: principal.sub, admin: principal.admin, channel: channelOf(request) };
}

/**
 * The session API: spawn (`POST`), list, get, delete, and follow a session's sandbox logs
 * over a WebSocket. The session service does the work; a user sees only their own sessions
 * (an admin sees all), and anyone else's is `404 session_not_found`.
 */
export const sessionRoutes: FastifyPluginAsyncTypebox<SessionRoutesOptions> = async (app, { nc, streams }) => {
  app.post(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Spawn a session (a worker in a new sandbox) from a template',
        description:
          'Answered 201 as soon as the worker exists (status `pending`); the spawn pipeline continues in the background and the session becomes `running` (or `failed` with the step and reason). 404 `template_not_found`; 400 `invalid_template` naming the file and key.',
        body: CreateSessionBody,
        response: { 201: SessionSchema, ...userErrors },
      },
    },
    async (request, reply) => {
      const rpc: CreateSessionRpcType = { viewer: viewerOf(request), body: request.body };
      const session = await requestJson<Session>(nc, subjects.rpc.createSession, rpc, { requestId: request.id });
      return reply.code(201).send(session);
    },
  );

  app.get(
    '/v1/sessions',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List your sessions, newest first',
        description: "`total` counts every session that matches `status`. An admin sees everyone's.",
        querystring: ListSessionsQuery,
        response: { 200: ListSessionsResponse, ...userErrors },
      },
    },
    async (request) => {
      const rpc: ListSessionsRpcType = {
        viewer: viewerOf(request),
        limit: request.query.limit,
        offset: request.query.offset,
        ...(request.query.status ? { status: request.query.status } : {}),
      };
      return requestJson<ListResponseOf<Session>>(nc, subjects.rpc.listSessions, rpc, { requestId: request.id, retries: 1 });
    },
  );

  app.get(
    '/v1/templates',
    {
      schema: {
        tags: ['sessions'],
        summary: 'List the templates a session can be started from',
        description:
          "By name: the configured templates directory's first, then the built-in ones it does not shadow. Read at each call, so an edited file shows at once; a broken file is listed with its `problem` (a session from it would be refused with that message).",
        response: { 200: ListTemplatesResponse, ...userErrors },
      },
    },
    async (request) => {
      const rpc: ListTemplatesRpcType = { viewer: viewerOf(request) };
      return requestJson<ListResponseOf<TemplateSummary>>(nc, subjects.rpc.listTemplates, rpc, { requestId: request.id, retries: 1 });
    },
  );

  app.get(
    '/v1/sessions/:id',
    {
      schema: { tags: ['sessions'], summary: 'One session', params: SessionParams, response: { 200: SessionSchema, ...userErrors } },
    },
    async (request) => {
      const rpc: SessionRpcType = { viewer: viewerOf(request), session_id: request.params.id };
      return requestJson<Session>(nc, subjects.rpc.getSession, rpc, { requestId: request.id, retries: 1 });
    },
  );

  app.delete(
    '/v1/sessions/:id',
    {
      schema: {
        tags: ['sessions'],
        summary: 'Stop a session: the agent stops, the sandbox goes, the worker token is revoked',
        description: 'Status `stopped` (a session that had already ended keeps its status). Deleting again is harmless and answers the same.',
        params: SessionParams,
        response: { 200: SessionSchema, ...userErrors },
      },
    },
    async (request) => {
      const rpc: SessionRpcType = { viewer: viewerOf(request), session_id: request.params.id };
      return requestJson<Session>(nc, subjects.rpc.deleteSession, rpc, { requestId: request.id, timeoutMs: DELETE_TIMEOUT_MS });
    },
  );

  app.route({
    method: 'GET',
    url: '/v1/sessions/:id/logs',
    schema: {
      tags: ['sessions'],
      summary: "Follow a session's sandbox logs (WebSocket)",
      description:
        'Upgrade to a WebSocket. Frames: `{kind:"lines",lines:[…]}` (the last `tail` lines first, then each new one), and `{kind:"end",reason}` when the sandbox\'s programs have ended; then the server closes with 1000. At shutdown it closes with 1012. While the session is `pending` or `provisioning` the upgrade is refused with 503 `unavailable` (its sandbox is being made: connect again).',
      params: SessionParams,
      querystring: SessionLogsQuery,
      response: { ...userErrors },
    },
    // Checked before the upgrade, so a refusal is an ordinary HTTP APIError.
    preHandler: async (request) => {
      const session = await requestJson<Session>(
        nc,
        subjects.rpc.getSession,
        { viewer: viewerOf(request), session_id: request.params.id } satisfies SessionRpcType,
        {
          requestId: request.id,
          retries: 1,
        },
      );
      // Its sandbox is still being made: there are no logs to follow yet, but there will be (a 503 is retried; an end would not be).
      if (session.status === 'pending' || session.status === 'provisioning')
        throw new CodedError(
          'unavailable',
          `session ${session.id} is ${session.status}: its sandbox logs can be followed once it runs; connect again in a moment`,
        );
      // A log stream counts against the person's streams like an event stream.
      streams.admit(request);
    },
    handler: async () => {
      throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
    },
    wsHandler: (socket, request) => {
      const followId = randomBytes(12).toString('base64url');
      const inbox = nc.subscribe(`_INBOX.logs.${followId}`, {
        callback: (err, msg) => {
          if (err) return;
          socket.send(msg.string());
          if (msg.json<SessionLogMessageType>().kind === 'end') socket.close(1000, 'the logs ended');
        },
      });
      const keepalive = setInterval(() => publishJson(nc, subjects.logFollowKeepalive(followId), {}), LOG_KEEPALIVE_INTERVAL_MS);
      streams.add(socket, () => JSON.stringify({ reason: 'the server is restarting; connect again' }), 'logs');
      socket.on('close', () => {
        clearInterval(keepalive);
        inbox.unsubscribe();
        streams.delete(socket);
        publishJson(nc, subjects.logFollowStop(followId), {});
      });
      const rpc: FollowLogsRpcType = {
        viewer: viewerOf(request),
        session_id: request.params.id,
        tail: request.query.tail,
        deliver_to: inbox.getSubject(),
        follow_id: followId,
      };
      requestJson(nc, subjects.rpc.followLogs, rpc, { requestId: request.id }).catch((err: unknown) => {
        request.log.warn({ err }, 'could not follow the logs');
        // A close reason holds at most 123 bytes.
        socket.close(1011, JSON.stringify({ reason: (err as Error).message.slice(0, 90) }));
      });
    },
  });
};
