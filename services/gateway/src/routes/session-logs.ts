import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { publishJson, requestJson } from '@svc/bus';
import {
  CodedError,
  SessionLogsQuery,
  SessionParams,
  subjects,
  type FollowLogsRpcType,
  type Session,
  type SessionLogMessageType,
  type SessionRpcType,
} from '@svc/protocol';
import { routePlugin } from './route-plugin.js';
import { userErrors, callerOf } from './sessions.js';

/** A log follower tells the session service it is still there this often. */
const LOG_KEEPALIVE_INTERVAL_MS = 10_000;

/**
 * Before the upgrade, so a refusal is an ordinary HTTP APIError: the session must be the
 * caller's and running, and the person must have a stream to spare.
 */
async function admitLogFollower(app: FastifyInstance, request: FastifyRequest, sessionId: string): Promise<void> {
  const rpc: SessionRpcType = { caller: callerOf(request), session_id: sessionId };
  const session = await requestJson<Session>(app.bus, subjects.rpc.getSession, rpc, { requestId: request.id, retries: 1 });
  // Its sandbox is still being made: there are no logs to follow yet, but there will be (a 503 is retried; an end would not be).
  if (session.status === 'pending' || session.status === 'provisioning')
    throw new CodedError('unavailable', `session ${session.id} is ${session.status}: its sandbox logs can be followed once it runs; connect again in a moment`);
  // A log stream counts against the person's streams like an event stream.
  app.openStreams.admit(request);
}

/** Asks the session service to send the session's logs (the last `tail` lines first) to an inbox of this socket's, and passes each message on. */
function followLogs(app: FastifyInstance, socket: WebSocket, request: FastifyRequest, { sessionId, tail }: { sessionId: string; tail: number }): void {
  const nc = app.bus;
  const followId = randomBytes(12).toString('base64url');
  const inbox = nc.subscribe(`_INBOX.logs.${followId}`, {
    callback: (err, msg) => {
      if (err) return;
      socket.send(msg.string());
      if (msg.json<SessionLogMessageType>().kind === 'end') socket.close(1000, 'the logs ended');
    },
  });
  const keepalive = setInterval(() => publishJson(nc, subjects.logFollowKeepalive(followId), {}), LOG_KEEPALIVE_INTERVAL_MS);
  app.openStreams.add(socket, () => JSON.stringify({ reason: 'the server is restarting; connect again' }), 'logs');
  socket.on('close', () => {
    clearInterval(keepalive);
    inbox.unsubscribe();
    app.openStreams.delete(socket);
    publishJson(nc, subjects.logFollowStop(followId), {});
  });
  const rpc: FollowLogsRpcType = {
    caller: callerOf(request),
    session_id: sessionId,
    tail,
    deliver_to: inbox.getSubject(),
    follow_id: followId,
  };
  requestJson(nc, subjects.rpc.followLogs, rpc, { requestId: request.id }).catch((err: unknown) => {
    request.log.warn({ err }, 'could not follow the logs');
    // A close reason holds at most 123 bytes.
    socket.close(1011, JSON.stringify({ reason: (err as Error).message.slice(0, 90) }));
  });
}

/** `WS /v1/sessions/{id}/logs`: follow a session's sandbox logs. */
export const sessionLogRoutes = routePlugin('svc-session-log-routes', ['svc-bus', 'svc-websockets'], async (app) => {
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
    preHandler: (request) => admitLogFollower(app, request, request.params.id),
    handler: async () => {
      throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
    },
    wsHandler: (socket, request) => followLogs(app, socket, request, { sessionId: request.params.id, tail: request.query.tail }),
  });
});
