import http from 'node:http';
import net from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { IncomingEvent, WorkerRecord } from '@svc/protocol';
import { createOutboundAddressCheck, type HostLookup } from '@svc/service-kit';
import type { Verdict } from '../raised-requests.js';
import type { TunnelPolicy } from './tunnel-policy.js';
import { acceptTunnels } from './tunnel-sockets.js';

/** A resolver from a table: these tests make no DNS query. */
function tableLookup(table: Record<string, string[]>): HostLookup {
  return async (name) => {
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  };
}

const silent = { error: () => {}, warn: () => {} } as unknown as FastifyBaseLogger;

/** A TCP server on 127.0.0.1 that answers each chunk with "echo <chunk>" and counts its connections. */
async function startEchoServer(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('data', (chunk) => socket.write(`echo ${chunk.toString()}`));
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const withEgress: WorkerRecord = {
  worker_id: 'wrk_egress',
  owner: 'alice',
  status: 'running',
  egress: { allow: [], deny: [], autonomous: false },
  updated_at: new Date().toISOString(),
};
const withoutEgress: WorkerRecord = { ...withEgress, worker_id: 'wrk_plain', egress: undefined };
const allowed: Verdict = { allow: true, by: 'policy', reason: 'listed' };

/** `CONNECT target` on `port` as `workerId`, `early` sent at once after the headers; resolves with the answer and what came through. */
function connectTo(port: number, target: string, workerId: string, early = ''): Promise<{ socket: net.Socket; status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\nx-svc-worker-id: ${workerId}\r\n\r\n${early}`),
    );
    let received = '';
    let status: number | undefined;
    socket.on('data', (chunk) => {
      received += chunk.toString();
      const end = received.indexOf('\r\n\r\n');
      if (status === undefined && end >= 0) {
        status = Number(received.split(' ')[1]);
        received = received.slice(end + 4);
      }
      if (status === 200 && received.length >= `echo ${early}`.length) resolve({ socket, status, text: received });
    });
    socket.on('end', () => resolve({ socket, status: status ?? 0, text: received.trim() }));
    socket.on('error', reject);
  });
}

/**
 * A listener taking tunnels through the real sockets and address check, the decision and the
 * history being stand-ins the test sets and reads; one per describe block, reset before each test.
 */
function tunnelHarness() {
  const harness = {
    proxyPort: 0,
    echo: undefined as unknown as Awaited<ReturnType<typeof startEchoServer>>,
    /** What the policy answers next (or throws, or waits for the agent to go). */
    decide: (async () => allowed) as TunnelPolicy['decide'],
    recorded: [] as Omit<IncomingEvent, 'ts'>[],
    connect: (target: string, workerId: string, early = '') => connectTo(harness.proxyPort, target, workerId, early),
    details: () => harness.recorded.map((event) => (event.data as { details: Record<string, unknown> }).details),
  };
  let proxy: http.Server;
  let tunnels: { close(): void };
  beforeAll(async () => {
    harness.echo = await startEchoServer();
    proxy = http.createServer();
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    harness.proxyPort = (proxy.address() as net.AddressInfo).port;
    tunnels = acceptTunnels(
      [proxy],
      {
        authenticate: async (request) =>
          ({ wrk_egress: withEgress, wrk_plain: withoutEgress })[String(request.headers['x-svc-worker-id'])] ?? 'the worker token is not valid',
        // Loopback is the outside here: the policy stand-in, not the address classes, decides.
        addresses: await createOutboundAddressCheck({
          allowedCidrs: ['127.0.0.0/8'],
          // 127.0.0.3 first: nothing listens there, so the tunnel is made on the second address.
          lookup: tableLookup({ 'echo.test': ['127.0.0.3', '127.0.0.1'], 'nobody.test': ['127.0.0.3'] }),
        }),
        policy: { decide: (...args) => harness.decide(...args) },
        records: { component: 'egress', record: async (_workerId, event) => void harness.recorded.push(event), close: () => {} },
      },
      silent,
    );
  });
  afterAll(async () => {
    tunnels.close();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
    await harness.echo.close();
  });
  beforeEach(() => {
    harness.decide = async () => allowed;
    harness.recorded = [];
  });
  return harness;
}

describe('egress tunnel sockets — a CONNECT that gets no tunnel is answered with why, and recorded', () => {
  const t = tunnelHarness();

  it('a CONNECT nobody may ask is 401, one whose target is not host:port 400; neither reaches the history', async () => {
    expect(await t.connect(`127.0.0.1:${t.echo.port}`, 'wrk_unknown')).toMatchObject({ status: 401, text: 'the worker token is not valid' });
    expect(await t.connect('127.0.0.1', 'wrk_egress')).toMatchObject({ status: 400, text: '"127.0.0.1" is not host:port' });
    expect(t.recorded).toEqual([]);
  });

  it("a worker without egress is refused 403, recorded as the policy's refusal of the target as asked", async () => {
    const tunnel = await t.connect(`127.0.0.1:${t.echo.port}`, 'wrk_plain');
    expect(tunnel.status).toBe(403);
    expect(tunnel.text).toContain('worker wrk_plain has no egress');
    expect(t.details()).toEqual([{ target: `127.0.0.1:${t.echo.port}`, decision: 'deny', decided_by: 'policy' }]);
  });

  it('a name that does not resolve is 502, nothing decided', async () => {
    t.decide = async () => expect.fail('an unresolved target is not decided');
    const tunnel = await t.connect('missing.test:443', 'wrk_egress');
    expect(tunnel.status).toBe(502);
    expect(t.details()).toEqual([{ target: 'missing.test:443', decision: 'deny', decided_by: 'policy' }]);
  });

  it('refused by the policy: 403 with its reason, recorded with the addresses the target resolved to; the upstream never sees it', async () => {
    t.decide = async () => ({ allow: false, by: 'alice', reason: 'denied by alice' });
    const before = t.echo.connections();
    const tunnel = await t.connect(`echo.test:${t.echo.port}`, 'wrk_egress');
    expect(tunnel).toMatchObject({ status: 403, text: `svc refused the connection to echo.test:${t.echo.port}: denied by alice` });
    expect(t.details()).toEqual([{ target: `echo.test:${t.echo.port}`, addresses: ['127.0.0.3', '127.0.0.1'], decision: 'deny', decided_by: 'alice' }]);
    expect(t.echo.connections()).toBe(before);
  });
});

describe('egress tunnel sockets — an allowed CONNECT is piped to the first address that answers, and closed', () => {
  const t = tunnelHarness();

  it('allowed: 200, made on the first address that answers, bytes sent with the CONNECT reach the upstream; recorded with that address', async () => {
    const tunnel = await t.connect(`echo.test:${t.echo.port}`, 'wrk_egress', 'early');
    expect(tunnel).toMatchObject({ status: 200, text: 'echo early' });
    tunnel.socket.destroy();
    expect(t.details()).toEqual([
      { target: `echo.test:${t.echo.port}`, addresses: ['127.0.0.3', '127.0.0.1'], address: '127.0.0.1', decision: 'allow', decided_by: 'policy' },
    ]);
  });

  it('allowed but no address answers: 502 naming the target and the error, decided by whoever allowed it', async () => {
    const tunnel = await t.connect(`nobody.test:${t.echo.port}`, 'wrk_egress');
    expect(tunnel).toMatchObject({
      status: 502,
      text: `svc refused the connection to nobody.test:${t.echo.port}: nobody.test:${t.echo.port} could not be reached (ECONNREFUSED)`,
    });
    expect(t.details()).toEqual([{ target: `nobody.test:${t.echo.port}`, addresses: ['127.0.0.3'], decision: 'deny', decided_by: 'policy' }]);
  });

  it('a decision that fails (the rules cannot be read, say) is 503, worth trying again', async () => {
    t.decide = async () => {
      throw new Error('no responders');
    };
    expect(await t.connect(`echo.test:${t.echo.port}`, 'wrk_egress')).toMatchObject({
      status: 503,
      text: 'svc could not decide this connection now; try again',
    });
  });

  // A reset, not an end: the listener keeps half-open sockets, so a FIN alone does not close it.
  it("the agent's connection reset before the decision aborts it, and nothing is connected or recorded", async () => {
    let aborted!: () => void;
    const abortSeen = new Promise<void>((resolve) => (aborted = resolve));
    let asked!: () => void;
    const decisionAsked = new Promise<void>((resolve) => (asked = resolve));
    t.decide = (_worker, _target, gone) =>
      new Promise((resolve) => {
        asked();
        gone.addEventListener('abort', () => {
          aborted();
          resolve(allowed);
        });
      });
    const before = t.echo.connections();
    const socket = net.connect(t.proxyPort, '127.0.0.1', () =>
      socket.write(`CONNECT echo.test:${t.echo.port} HTTP/1.1\r\nx-svc-worker-id: wrk_egress\r\n\r\n`),
    );
    await decisionAsked;
    socket.resetAndDestroy();
    await abortSeen;
    // The tunnel's last step runs in the microtasks after the decision: one macrotask later it is done.
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.echo.connections()).toBe(before);
    expect(t.recorded).toEqual([]);
  });

  it('close destroys the open tunnels and takes no more CONNECTs', async () => {
    const local = http.createServer();
    await new Promise<void>((resolve) => local.listen(0, '127.0.0.1', resolve));
    const ownTunnels = acceptTunnels(
      [local],
      {
        authenticate: async () => withEgress,
        addresses: await createOutboundAddressCheck({ allowedCidrs: ['127.0.0.0/8'] }),
        policy: { decide: async () => allowed },
        records: { component: 'egress', record: async () => {}, close: () => {} },
      },
      silent,
    );
    const socket = net.connect((local.address() as net.AddressInfo).port, '127.0.0.1', () => socket.write(`CONNECT 127.0.0.1:${t.echo.port} HTTP/1.1\r\n\r\n`));
    await new Promise<void>((resolve) => socket.once('data', () => resolve()));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    ownTunnels.close();
    await closed;
    expect(local.listenerCount('connect')).toBe(0);
    await new Promise<void>((resolve) => local.close(() => resolve()));
  });
});
