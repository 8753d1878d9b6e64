import type { IncomingMessage, Server } from 'node:http';
import net, { type Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { parseEgressTarget } from '@svc/protocol';
import type { OutboundAddressCheck } from '@svc/service-kit';
import type { ResolvedTarget } from './egress-rules.js';
import type { TunnelAuthentication } from './tunnel-authentication.js';
import { resolveTunnelTarget, type TunnelPolicy } from './tunnel-policy.js';
import type { ComponentRecords } from '../raised-requests.js';
import { tunnelEvent } from './tunnel-records.js';

/** What a CONNECT goes through before it is a tunnel. */
export interface TunnelSteps {
  authenticate: TunnelAuthentication;
  /** Resolves a target once and refuses the control plane's own endpoints (refused-addresses.ts). */
  addresses: OutboundAddressCheck;
  policy: TunnelPolicy;
  records: ComponentRecords;
}

/** Answers a CONNECT that gets no tunnel, and closes it. */
function answer(socket: Socket, status: number, reason: string): void {
  const text = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 502: 'Bad Gateway', 503: 'Service Unavailable' }[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${reason}\n`);
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

/** Answers the CONNECT with `200` and pipes the agent's socket and the upstream into each other; either closing closes both. */
function pipeTunnel(socket: Socket, upstream: Socket, head: Buffer, open: Set<Socket>): void {
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

/** One CONNECT, from who asks to a tunnel or a refusal, each outcome recorded in the worker's history. */
async function handleConnect(steps: TunnelSteps, open: Set<Socket>, request: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
  const worker = await steps.authenticate(request);
  if (typeof worker === 'string') return answer(socket, 401, worker);
  const asked = parseEgressTarget(request.url ?? '');
  if (!asked) return answer(socket, 400, `${JSON.stringify(request.url)} is not host:port`);
  const workerId = worker.worker_id;
  // Set once the target is resolved: the records say what it resolved to from then on.
  let target: ResolvedTarget | undefined;
  const recordTunnel = (level: 'info' | 'warn', outcome: string, details: Record<string, unknown>) =>
    steps.records.record(workerId, tunnelEvent(asked, target, level, outcome, details));
  const refuse = async (status: number, reason: string, by: string) => {
    await recordTunnel('warn', `refused (${reason})`, { decision: 'deny', decided_by: by });
    answer(socket, status, `svc refused the connection to ${asked.target}: ${reason}`);
  };
  if (!worker.egress) return refuse(403, `worker ${workerId} has no egress (its sandbox is not sealed, or it runs without a sidecar)`, 'policy');

  const resolution = await resolveTunnelTarget(steps.addresses, asked);
  if ('refusal' in resolution) return refuse(resolution.refusal.status, resolution.refusal.reason, 'policy');
  const resolved = (target = resolution.target);

  const gone = new AbortController();
  socket.once('close', () => gone.abort());
  const verdict = await steps.policy.decide(worker, resolved, gone.signal);
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
  pipeTunnel(socket, upstream, head, open);
}

/**
 * Takes the CONNECT requests of `servers` as tunnels. Every socket a tunnel holds, the agent's
 * and the upstream's, is destroyed at `close`; a tunnel that fails to be decided is answered
 * `503`, worth trying again.
 */
export function acceptTunnels(servers: readonly Server[], steps: TunnelSteps, log: FastifyBaseLogger): { close(): void } {
  const open = new Set<Socket>();
  const onConnect = (request: IncomingMessage, socket: Socket, head: Buffer) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    socket.on('error', () => socket.destroy());
    handleConnect(steps, open, request, socket, head).catch((err: unknown) => {
      log.error({ err }, 'an egress tunnel failed');
      answer(socket, 503, 'svc could not decide this connection now; try again');
    });
  };
  for (const server of servers) server.on('connect', onConnect);
  return {
    close() {
      for (const server of servers) server.off('connect', onConnect);
      for (const socket of open) socket.destroy();
    },
  };
}
