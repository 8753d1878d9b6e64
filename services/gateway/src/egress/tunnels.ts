import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import net, { type Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { createWorkerTokenVerifier, type WorkerDirectory } from '@svc/auth';
import { createIncomingEventPublisher, requestJson, type NatsConnection } from '@svc/bus';
import {
  componentSource,
  controlWithdrawnData,
  DEFAULT_DECISION_TIMEOUT_S,
  EGRESS_SUBTYPE,
  EGRESS_TOOL,
  isEndedStatus,
  parseEgressTarget,
  subjects,
  parseSource,
  POLICY_SOURCE,
  type EventData,
  type EgressRequestInput,
  type EventSource,
  type IncomingEvent,
  type StoredEvent,
  type ListResponseOf,
  type PermissionRule,
  type WorkerRecord,
} from '@svc/protocol';
import type { OutboundAddressCheck } from '@svc/service-kit';
import type { LiveFeeds } from '../live-feeds.js';
import { peopleVerdict, resolvedTarget, templateVerdict, type ResolvedTarget, type Verdict } from './egress-rules.js';

export interface EgressTunnelOptions {
  /** The listeners whose CONNECT requests are tunnels (the worker port, and the public one for sidecars that call it). */
  servers: readonly Server[];
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
  /** Resolves a target once and refuses the control plane's own endpoints (refused-addresses.ts). */
  addresses: OutboundAddressCheck;
  logger: FastifyBaseLogger;
}

/**
 * Connects to the first of `addresses` (every one of them checked) that answers, in the
 * resolver's order: a name whose first address has no listener (`localhost` as ::1, say) is
 * still reached on the next.
 */
function connectToFirst(addresses: readonly string[], port: number): Promise<{ upstream: Socket; address: string } | { error: NodeJS.ErrnoException }> {
  return new Promise((resolve) => {
    const attempt = (index: number) => {
      const address = addresses[index]!;
      const upstream = net.connect({ host: address, port });
      upstream.setNoDelay(true);
      upstream.once('error', (error: NodeJS.ErrnoException) => (index + 1 < addresses.length ? attempt(index + 1) : resolve({ error })));
      upstream.once('connect', () => {
        upstream.removeAllListeners('error');
        // Until the tunnel's own handlers are on it.
        upstream.on('error', () => upstream.destroy());
        resolve({ upstream, address });
      });
    };
    attempt(0);
  });
}

/** How long past the worker's decision deadline a tunnel still waits (the control service decides at the deadline). */
const DEADLINE_SLACK_MS = 30_000;

/**
 * Egress tunnels (docs/egress.md): a sidecar's `CONNECT host:port` with its worker token. The
 * gateway, not the sandbox, decides, on the target's name and the addresses it resolves to (once):
 * the control plane's own endpoints are refused whatever any rule says; then the template decides
 * what it names (egress-rules.ts), which alone opens an address that is not the outside; then the
 * rules people added with "always", and — for anything else — a person, through a
 * `control_request` with tool `network` (held open until decided or its deadline passes), or the
 * policy at once for an autonomous worker. The agent holds the worker token too, so a tunnel it
 * asks for directly is decided the same way. Every tunnel, opened or refused, is recorded in the
 * worker's history.
 */
export function serveEgressTunnels(options: EgressTunnelOptions): { close(): void } {
  const log = options.logger.child({ component: 'egress' });
  const publisher = createIncomingEventPublisher(options.nc, componentSource('egress'));
  const tokens = createWorkerTokenVerifier();
  const open = new Set<Socket>();

  /** Records an event of the egress proxy's (or, with `source`, of the policy it applied). */
  const record = (workerId: string, event: Omit<IncomingEvent, 'ts'>, source?: EventSource) => {
    return publisher
      .publish(workerId, { ...event, ts: new Date().toISOString() } as IncomingEvent, source ? { source } : {})
      .catch((err: unknown) => log.warn({ err, worker_id: workerId }, 'could not record an egress event'));
  };

  function answer(socket: Socket, status: number, reason: string): void {
    const text = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 502: 'Bad Gateway', 503: 'Service Unavailable' }[status] ?? 'Error';
    socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${reason}\n`);
  }

  async function authenticate(request: IncomingMessage): Promise<WorkerRecord | string> {
    const header = request.headers['authorization'] ?? request.headers['proxy-authorization'];
    const token = typeof header === 'string' ? /^Bearer (\S+)$/i.exec(header)?.[1] : undefined;
    const workerId = request.headers['x-svc-worker-id'];
    if (!token || typeof workerId !== 'string') return 'a tunnel needs the worker token (Authorization: Bearer) and x-svc-worker-id';
    const worker = await options.workers.get(workerId);
    if (!worker?.token_hash || !tokens.matches(token, worker.token_hash) || isEndedStatus(worker.status))
      return 'the worker token is not valid for this worker';
    return worker;
  }

  /** Waits for the decision on `requestId` (announced as the worker's events are stored). */
  function decision(workerId: string, requestId: string, timeoutMs: number, gone: AbortSignal): Promise<StoredEvent<'control_response'> | undefined> {
    return new Promise((resolve) => {
      const finish = (value: StoredEvent<'control_response'> | undefined) => {
        stop();
        clearTimeout(timer);
        gone.removeEventListener('abort', onGone);
        resolve(value);
      };
      const stop = options.live.watch(workerId, (event) => {
        // A person's decision or the deadline's: a worker's own "policy" answer to a tunnel request is no decision.
        if (event.type !== 'control_response' || (event.data as EventData<'control_response'>).request_id !== requestId) return;
        const decider = parseSource(event.source).kind;
        if (decider === 'person' || decider === 'policy') finish(event as StoredEvent<'control_response'>);
      });
      const timer = setTimeout(() => finish(undefined), timeoutMs);
      const onGone = () => finish(undefined);
      gone.addEventListener('abort', onGone);
    });
  }

  async function decide(worker: WorkerRecord, target: ResolvedTarget, gone: AbortSignal): Promise<Verdict> {
    const policy = worker.egress!;
    const byTemplate = templateVerdict(policy, target);
    if (byTemplate) return byTemplate;
    const rules = await requestJson<ListResponseOf<PermissionRule>>(options.nc, subjects.rpc.permissionRules, { worker_id: worker.worker_id }, { retries: 1 });
    const byPeople = peopleVerdict(rules.items, target);
    if (byPeople) return byPeople;

    // Asked like a tool call: the history shows the request, whoever answers it, and the person
    // sees the addresses the tunnel would really reach.
    const requestId = `net_${randomUUID()}`;
    const input: EgressRequestInput = {
      target: target.target,
      host: target.host,
      port: target.port,
      addresses: target.addresses.map(({ address }) => address),
    };
    const request: EventData<'control_request'> = { request_id: requestId, tool_name: EGRESS_TOOL, input: { ...input } };
    if (policy.autonomous) {
      const data: EventData<'control_response'> = {
        request_id: requestId,
        decision: 'allow',
        message: 'autonomous: what is not denied is allowed',
        decided_by: 'policy',
      };
      await record(worker.worker_id, { type: 'control_request', uid: `egress:${requestId}:request`, data: request });
      await record(worker.worker_id, { type: 'control_response', uid: `egress:${requestId}:decision`, data }, POLICY_SOURCE);
      return { allow: true, by: 'policy', reason: data.message! };
    }
    const deadlineMs = (worker.decision_policy?.decision_timeout_s ?? DEFAULT_DECISION_TIMEOUT_S) * 1000 + DEADLINE_SLACK_MS;
    const decided = decision(worker.worker_id, requestId, deadlineMs, gone);
    await record(worker.worker_id, { type: 'control_request', uid: `egress:${requestId}:request`, data: request });
    const decisionEvent = await decided;
    if (!decisionEvent) {
      // The agent gave up (or nobody decided, not even the deadline's policy): the request goes.
      await record(worker.worker_id, { type: 'system', uid: `egress:${requestId}:withdrawn`, data: controlWithdrawnData(requestId) });
      return { allow: false, by: 'policy', reason: gone.aborted ? 'the agent closed the connection before a decision' : 'no decision before the deadline' };
    }
    // Who decided is the stored event's source (a person's, or the deadline's policy), not a name in its data.
    const { data, source } = decisionEvent;
    const decider = parseSource(source);
    const by = decider.kind === 'person' ? decider.sub : data.decided_by;
    return { allow: data.decision === 'allow', by, reason: data.message ?? `${data.decision === 'allow' ? 'allowed' : 'denied'} by ${by}` };
  }

  async function handle(request: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    const worker = await authenticate(request);
    if (typeof worker === 'string') return answer(socket, 401, worker);
    const asked = parseEgressTarget(request.url ?? '');
    if (!asked) return answer(socket, 400, `${JSON.stringify(request.url)} is not host:port`);
    const workerId = worker.worker_id;
    // Set once the target is resolved: the records say what it resolved to from then on.
    let target: ResolvedTarget | undefined;
    const recordTunnel = (level: 'info' | 'warn', outcome: string, details: Record<string, unknown>) =>
      record(workerId, {
        type: 'system',
        uid: `egress:${randomUUID()}`,
        data: {
          level,
          subtype: EGRESS_SUBTYPE,
          message: `egress to ${asked.target}: ${outcome}`,
          details: { target: target?.target ?? asked.target, ...(target ? { addresses: target.addresses.map(({ address }) => address) } : {}), ...details },
        },
      });
    const refuse = async (status: number, reason: string, by: string) => {
      await recordTunnel('warn', `refused (${reason})`, { decision: 'deny', decided_by: by });
      answer(socket, status, `svc refused the connection to ${asked.target}: ${reason}`);
    };
    if (!worker.egress) return refuse(403, `worker ${workerId} has no egress (its sandbox is not sealed, or it runs without a sidecar)`, 'policy');

    // Resolved once, weighed on every address, and connected to by address: a name cannot be
    // re-pointed in between, and no spelling of an address escapes a rule about it.
    const inspection = await options.addresses.inspect(asked.host, asked.port);
    if (!inspection.resolved) {
      const status = inspection.refusal === 'unresolved' ? 502 : inspection.refusal === 'invalid-host' ? 400 : 403;
      return refuse(status, inspection.reason, 'policy');
    }
    const resolved = (target = resolvedTarget(asked.port, inspection));

    const gone = new AbortController();
    socket.once('close', () => gone.abort());
    const verdict = await decide(worker, resolved, gone.signal);
    if (gone.signal.aborted) return;
    if (!verdict.allow) return refuse(403, verdict.reason, verdict.by);

    const connected = await connectToFirst(
      resolved.addresses.map(({ address }) => address),
      resolved.port,
    );
    if ('error' in connected) return refuse(502, `${resolved.target} could not be reached (${connected.error.code ?? connected.error.message})`, verdict.by);
    const { upstream, address } = connected;
    if (gone.signal.aborted) {
      upstream.destroy();
      return;
    }
    open.add(upstream);
    void recordTunnel('info', `opened (${verdict.reason})`, { address, decision: 'allow', decided_by: verdict.by });
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket).pipe(upstream);
    const end = () => {
      open.delete(upstream);
      upstream.destroy();
      socket.destroy();
    };
    upstream.on('error', end).on('close', end);
    socket.on('error', end).on('close', end);
  }

  const onConnect = (request: IncomingMessage, socket: Socket, head: Buffer) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
    handle(request, socket, head).catch((err: unknown) => {
      log.error({ err }, 'an egress tunnel failed');
      answer(socket, 503, 'svc could not decide this connection now; try again');
    });
  };
  for (const server of options.servers) server.on('connect', onConnect);
  return {
    close() {
      for (const server of options.servers) server.off('connect', onConnect);
      for (const socket of open) socket.destroy();
      publisher.close();
    },
  };
}
