import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { createIncomingEventPublisher, requestJson } from '@svc/bus';
import {
  CodedError,
  componentSource,
  isEndedStatus,
  personSource,
  subjects,
  TERMINAL_CLOSE,
  TERMINAL_CONNECT_TIMEOUT_MS,
  TerminalParams,
  TerminalQuery,
  terminalRequestData,
  WorkerParams,
  type AuditFacts,
  type PersonChannel,
} from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { channelOf } from './audit.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** A plain request to a WebSocket route. */
async function notWebSocket(): Promise<never> {
  throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
}

/** The most terminal ends one worker's sandbox may hold on one gateway (a person opens a few at most). */
const MAX_SANDBOX_TERMINALS_PER_WORKER = 8;

/**
 * Relays one end of a terminal over NATS: what this end's socket receives is published to
 * `outward`, what comes in on `inward` is sent on the socket; either end closing closes the other.
 * Bytes travel as they are (binary frames).
 */
function relay(app: FastifyInstance, socket: WebSocket, subjectsOf: { outward: string; inward: string; closed: string }): { closed: Promise<void> } {
  const nc = app.bus;
  let open = true;
  const inward = nc.subscribe(subjectsOf.inward, {
    callback: (err, msg) => {
      if (!err && open) socket.send(msg.data, { binary: true });
    },
  });
  const closedElsewhere = nc.subscribe(subjectsOf.closed, {
    callback: (err, msg) => {
      if (err || !open) return;
      const { code, reason } = msg.json<{ code: number; reason: string }>();
      socket.close(code, reason);
    },
  });
  socket.on('message', (data: Buffer, isBinary: boolean) => nc.publish(subjectsOf.outward, isBinary ? data : Buffer.from(data.toString('utf8'))));
  return {
    closed: new Promise<void>((resolve) =>
      socket.on('close', (code: number, reason: Buffer) => {
        open = false;
        inward.unsubscribe();
        closedElsewhere.unsubscribe();
        nc.publish(
          subjectsOf.closed,
          JSON.stringify({ code: code === 1005 || code === 1006 ? TERMINAL_CLOSE.otherEndGone : code, reason: reason.toString().slice(0, 90) }),
        );
        resolve();
      }),
    ),
  };
}

/** Before the upgrade, so a refusal is an ordinary APIError: the worker is the caller's (else 404) and has not ended. */
async function admitTerminal(app: FastifyInstance, request: FastifyRequest, workerId: string): Promise<void> {
  const worker = await authorizeWorker(request, app.workers, workerId, 'operator');
  if (isEndedStatus(worker.status))
    throw new CodedError('worker_ended', `worker ${workerId} is ${worker.status}: its sandbox has no sidecar to open a terminal`);
  app.openStreams.admit(request);
}

/**
 * Terminals into a sandbox (docs/workspace.md, "The terminal"). A person's WebSocket
 * (`/v1/workers/{id}/terminal`): the request is stored in the worker's history (the sidecar reads
 * it on its control channel) and audited; the sidecar's WebSocket (`…/terminals/{terminal_id}`,
 * its worker's token, through the worker port: the sandbox only connects out) is the other end.
 * The two may reach different gateways: each relays its end over NATS.
 */
export const terminalRoutes = routePlugin('svc-terminal-routes', ['svc-bus', 'svc-worker-directory', 'svc-websockets'], async (app) => {
  const publisher = createIncomingEventPublisher(app.bus, componentSource('workspace'));
  app.addHook('onClose', async () => publisher.close());

  app.route({
    method: 'GET',
    url: '/v1/workers/:id/terminal',
    config: { auth: 'user' },
    schema: {
      tags: ['workspace'],
      summary: 'A terminal in the sandbox (WebSocket)',
      description:
        "Upgrade to a WebSocket: a shell in the sandbox's `/workspace`, its bytes both ways in binary frames. For its operators (the owner, admins, and operators of its access list: docs/teams.md); every terminal is audited (`terminal_opened`). The sandbox's end connects within 15 s or the socket closes with 4001; the shell ending closes it with 4000. `409 worker_ended` for an ended worker.",
      params: WorkerParams,
      querystring: TerminalQuery,
      response: { ...errorResponses(400, 401, 404, 409, 429, 503) },
    },
    preHandler: (request) => admitTerminal(app, request, request.params.id),
    handler: notWebSocket,
    wsHandler: (socket, request) => void openTerminal(socket, request, { workerId: request.params.id, size: request.query }),
  });

  async function openTerminal(socket: WebSocket, request: FastifyRequest, { workerId, size }: { workerId: string; size: { cols: number; rows: number } }) {
    const terminalId = `trm_${randomBytes(12).toString('base64url')}`;
    const principal = request.principal!;
    const sub = principal.kind === 'user' ? principal.sub : 'worker';
    const channel = channelOf(request) as PersonChannel;
    app.openStreams.add(socket, () => JSON.stringify({ reason: 'the server is restarting; connect again' }), 'terminal');
    const connected = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), TERMINAL_CONNECT_TIMEOUT_MS);
      const subscription = app.bus.subscribe(subjects.terminalConnected(workerId, terminalId), {
        max: 1,
        callback: () => {
          clearTimeout(timer);
          resolve(true);
        },
      });
      socket.once('close', () => {
        clearTimeout(timer);
        subscription.unsubscribe();
      });
    });
    const ends = relay(app, socket, {
      outward: subjects.terminalToSandbox(workerId, terminalId),
      inward: subjects.terminalToPerson(workerId, terminalId),
      closed: subjects.terminalClosed(workerId, terminalId),
    });
    void ends.closed.then(() => app.openStreams.delete(socket));
    try {
      await publisher.publish(
        workerId,
        { type: 'system', uid: `terminal:${terminalId}`, ts: new Date().toISOString(), data: terminalRequestData(terminalId, size) },
        { source: personSource(channel, sub) },
      );
      const facts: AuditFacts = {
        id: `terminal:${terminalId}`,
        at: new Date().toISOString(),
        actor: sub,
        channel,
        action: 'terminal_opened',
        worker_id: workerId,
        details: { terminal_id: terminalId },
      };
      await requestJson(app.bus, subjects.rpc.appendAudit, facts, { retries: 2 });
    } catch (err) {
      request.log.warn({ err, worker_id: workerId }, 'a terminal could not be requested');
      return socket.close(1011, JSON.stringify({ reason: 'the terminal could not be requested: try again' }));
    }
    if (!(await connected) && socket.readyState === socket.OPEN)
      socket.close(TERMINAL_CLOSE.sandboxUnanswered, JSON.stringify({ reason: "the sandbox's sidecar did not answer" }));
  }
});

/** `WS /v1/workers/{id}/terminals/{terminal_id}`: the sandbox's end of a terminal, opened by its sidecar through the worker port. */
export const sandboxTerminalRoutes = routePlugin('svc-sandbox-terminal-routes', ['svc-bus', 'svc-websockets'], async (app) => {
  /** The terminal ends each worker's sandbox holds on this gateway. */
  const sandboxEnds = new Map<string, number>();

  app.route({
    method: 'GET',
    url: '/v1/workers/:id/terminals/:terminal_id',
    config: { auth: 'worker' },
    schema: { hide: true, params: TerminalParams },
    // Before the upgrade: a sandbox holds a bounded number of terminal ends on this gateway (each is two subscriptions).
    preHandler: async (request) => {
      if ((sandboxEnds.get(request.params.id) ?? 0) >= MAX_SANDBOX_TERMINALS_PER_WORKER)
        throw new CodedError(
          'rate_limited',
          `worker ${request.params.id} holds ${MAX_SANDBOX_TERMINALS_PER_WORKER} terminal ends on this gateway, the most one may`,
        );
    },
    handler: notWebSocket,
    wsHandler: (socket, request) => {
      const { id: workerId, terminal_id: terminalId } = request.params;
      sandboxEnds.set(workerId, (sandboxEnds.get(workerId) ?? 0) + 1);
      socket.once('close', () => {
        const left = (sandboxEnds.get(workerId) ?? 1) - 1;
        if (left > 0) sandboxEnds.set(workerId, left);
        else sandboxEnds.delete(workerId);
      });
      relay(app, socket, {
        outward: subjects.terminalToPerson(workerId, terminalId),
        inward: subjects.terminalToSandbox(workerId, terminalId),
        closed: subjects.terminalClosed(workerId, terminalId),
      });
      app.bus.publish(subjects.terminalConnected(workerId, terminalId));
    },
  });
});
