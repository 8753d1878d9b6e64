import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOidcVerifier } from '@svc/auth';
import { requestJson } from '@svc/bus';
import { subjects, type EgressPolicy, type ListResponseOf, type PermissionRule, type StoredEvent } from '@svc/protocol';
import { freePort, waitFor } from '@svc/test-support';
import { AUDIENCE, DEFAULT_SETTINGS, startGatewayFixture, type GatewayFixture } from '../../test/fixture.js';
import { buildGatewayApp, type GatewayApp } from '../app.js';

/** A TCP server that answers each chunk with "echo <chunk>" and counts its connections. */
async function startEchoServer(host = '127.0.0.1'): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.on('data', (chunk) => socket.write(`echo ${chunk.toString()}`));
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Tunnel {
  status: number;
  /** The refusal's body, or what came back through an open tunnel for "ping". */
  text: string;
}

describe('egress tunnels — decided on addresses: a host loopback listener stays out of reach unless the template names it', () => {
  let gw: GatewayFixture;
  /** The gateway under test: it knows NATS, the store and its own worker port, and the operator opens 127.0.0.2 to people. */
  let gateway: GatewayApp;
  let workerPort: number;
  let alice: string;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;
  /** A listener standing in for the store (the gateway's SVC_DATABASE_URL). */
  let store: Awaited<ReturnType<typeof startEchoServer>>;
  /** A listener in the operator's SVC_EGRESS_ALLOWED_CIDRS (127.0.0.2/32): people decide on it. */
  let inRange: Awaited<ReturnType<typeof startEchoServer>>;
  let workers = 0;

  beforeAll(async () => {
    [echo, store, inRange] = await Promise.all([startEchoServer(), startEchoServer(), startEchoServer('127.0.0.2')]);
    gw = await startGatewayFixture({}, [], { services: true });
    alice = await gw.userToken('alice');
    workerPort = await freePort();
    gateway = await buildGatewayApp({
      nc: gw.bus.nc,
      logger: gw.bus.logger,
      instance: 'gw-egress',
      settings: {
        ...DEFAULT_SETTINGS,
        natsUrl: gw.bus.url,
        databaseUrl: `postgres://svc:secret@127.0.0.1:${store.port}/svc`,
        workerPort,
        egressAllowedCidrs: ['127.0.0.2/32'],
      },
      users: createOidcVerifier({ issuer: gw.issuer.issuer, audience: AUDIENCE, jwksCooldownMs: 0, adminClaim: 'svc_admin' }),
      workers: gw.workers,
    });
    await new Promise<void>((resolve) => gateway.workerListener.listen(workerPort, '127.0.0.1', resolve));
  }, 60_000);
  afterAll(async () => {
    await gateway?.close();
    await gw?.stop();
    await Promise.all([echo?.close(), store?.close(), inRange?.close()]);
  });

  const asUser = (token: string) => ({ authorization: `Bearer ${token}` });

  /** A running worker of alice's with this egress policy, and its token. */
  async function worker(egress: EgressPolicy): Promise<{ id: string; token: string }> {
    const id = `wrk_egress_${++workers}`;
    return { id, token: await gw.createWorker(id, 'alice', 'running', { egress }) };
  }

  /** `CONNECT target` on the gateway's worker port with the worker's token, as the sidecar makes it; "ping" through an open tunnel. */
  function connect(target: string, as: { id: string; token: string }): Promise<Tunnel> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(workerPort, '127.0.0.1', () =>
        socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\nauthorization: Bearer ${as.token}\r\nx-svc-worker-id: ${as.id}\r\n\r\n`),
      );
      let received = '';
      let status: number | undefined;
      socket.on('data', (chunk) => {
        received += chunk.toString();
        const end = received.indexOf('\r\n\r\n');
        if (status === undefined && end >= 0) {
          status = Number(received.split(' ')[1]);
          received = received.slice(end + 4);
          if (status === 200) socket.write('ping');
        }
        if (status === 200 && received === 'echo ping') {
          socket.destroy();
          resolve({ status, text: received });
        }
      });
      socket.on('end', () => resolve({ status: status ?? 0, text: received.trim() }));
      socket.on('error', reject);
    });
  }

  const events = async (workerId: string) =>
    ((await gw.app.inject({ url: `/v1/workers/${workerId}/sdk-events?limit=1000`, headers: asUser(alice) })).json() as ListResponseOf<StoredEvent>).items;
  const openRequests = async (workerId: string) =>
    (
      (await gw.app.inject({ url: `/v1/workers/${workerId}/control/requests?state=open`, headers: asUser(alice) })).json() as ListResponseOf<
        StoredEvent<'control_request'>
      >
    ).items;

  it('refused however spelled (2130706433, 0x7f.1, mapped IPv6, localhost), nobody asked, even in autonomous mode; each refusal recorded with its addresses', async () => {
    const spellings = [`127.0.0.1:${echo.port}`, `2130706433:${echo.port}`, `0x7f.1:${echo.port}`, `[::ffff:127.0.0.1]:${echo.port}`, `localhost:${echo.port}`];
    for (const autonomous of [false, true]) {
      const agent = await worker({ allow: [], deny: [], autonomous });
      for (const target of spellings) {
        const tunnel = await connect(target, agent);
        expect(tunnel.status, target).toBe(403);
        expect(tunnel.text, target).toMatch(
          new RegExp(
            `^svc refused the connection to ${target.replace(/[[\]]/g, '\\$&')}: .*a loopback address, which nobody may open but the template's egress list, naming that address$`,
          ),
        );
      }
      const recorded = await waitFor('every refusal recorded', async () => {
        const found = (await events(agent.id)).filter((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.subtype === 'egress');
        return found.length === spellings.length ? found : undefined;
      });
      expect(recorded.slice(0, 4).map((e) => e.data.details)).toEqual(
        Array.from({ length: 4 }, () => ({ target: `127.0.0.1:${echo.port}`, addresses: ['127.0.0.1'], decision: 'deny', decided_by: 'policy' })),
      );
      expect(recorded[4]!.data.details).toMatchObject({ target: `localhost:${echo.port}`, decision: 'deny' });
      expect((await events(agent.id)).filter((e) => e.type === 'control_request' || e.type === 'control_response')).toEqual([]);
    }
    expect(echo.connections()).toBe(0);
  });

  it('refused even after a person allowed the network tool "always"', async () => {
    const agent = await worker({ allow: [], deny: [], autonomous: false });
    // The agent asks for the loopback port itself; alice allows it, for every target from now on.
    const posted = await gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${agent.id}/sdk-events`,
      headers: asUser(agent.token),
      payload: {
        events: [
          {
            type: 'control_request',
            uid: 'cr-net-1',
            ts: new Date().toISOString(),
            data: { request_id: 'net_1', tool_name: 'network', input: { target: `127.0.0.1:${echo.port}` } },
          },
        ],
      },
    });
    expect(posted.statusCode).toBe(202);
    await waitFor('the request open', async () => (await openRequests(agent.id)).length === 1);
    const decided = await gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${agent.id}/control`,
      headers: asUser(alice),
      payload: { request_id: 'net_1', decision: 'allow', scope: 'always' },
    });
    expect(decided.statusCode).toBe(201);
    const rules = await requestJson<ListResponseOf<PermissionRule>>(gw.bus.nc, subjects.rpc.permissionRules, { worker_id: agent.id });
    expect(rules.items).toEqual([expect.objectContaining({ tool_name: 'network', decision: 'allow' })]);

    for (const target of [`127.0.0.1:${echo.port}`, `2130706433:${echo.port}`, `localhost:${echo.port}`]) {
      const tunnel = await connect(target, agent);
      expect(tunnel.status, target).toBe(403);
      expect(tunnel.text, target).toContain('a loopback address');
    }
    expect(echo.connections()).toBe(0);
  });

  it("opened when the template's egress list names the address, in any spelling or as a CIDR; a deny rule in another spelling still binds; a name alone opens nothing", async () => {
    const listed = await worker({ allow: [`127.0.0.1:${echo.port}`], deny: [], autonomous: false });
    expect(await connect(`127.0.0.1:${echo.port}`, listed)).toEqual({ status: 200, text: 'echo ping' });
    expect(await connect(`2130706433:${echo.port}`, listed)).toEqual({ status: 200, text: 'echo ping' });
    // Another port of the same address is not named.
    expect((await connect(`127.0.0.1:${echo.port === 65535 ? 1 : echo.port + 1}`, listed)).text).toContain('a loopback address');

    const byCidr = await worker({ allow: ['127.0.0.0/8:*', '[::1]:*'], deny: [], autonomous: false });
    expect(await connect(`0x7f.1:${echo.port}`, byCidr)).toEqual({ status: 200, text: 'echo ping' });
    // Every address of localhost is named (127.0.0.1 and, where it has it, ::1): the first that answers is reached.
    expect(await connect(`localhost:${echo.port}`, byCidr)).toEqual({ status: 200, text: 'echo ping' });

    const denied = await worker({ allow: [`127.0.0.1:${echo.port}`], deny: ['network(0x7f.1:*)'], autonomous: false });
    expect(await connect(`127.0.0.1:${echo.port}`, denied)).toEqual({
      status: 403,
      text: `svc refused the connection to 127.0.0.1:${echo.port}: denied by the template's rule network(0x7f.1:*)`,
    });

    const byName = await worker({ allow: [`localhost:${echo.port}`], deny: [], autonomous: true });
    expect((await connect(`localhost:${echo.port}`, byName)).status).toBe(403);
    expect(echo.connections()).toBe(4);
  });

  it("the store, NATS and the gateway's own port are refused even when the template names them, on every local address", async () => {
    const natsPort = Number(new URL(gw.bus.url).port);
    const agent = await worker({ allow: ['127.0.0.0/8:*', '[::1]:*'], deny: [], autonomous: true });
    const refusals = {
      [`127.0.0.1:${store.port}`]: `port ${store.port} of 127.0.0.1 is a control-plane endpoint (the store)`,
      [`2130706433:${store.port}`]: `port ${store.port} of 127.0.0.1 is a control-plane endpoint (the store)`,
      [`localhost:${store.port}`]: `control-plane endpoint (the store)`,
      [`127.0.0.1:${natsPort}`]: `port ${natsPort} of 127.0.0.1 is a control-plane endpoint (NATS)`,
      [`127.0.0.2:${natsPort}`]: `port ${natsPort} of 127.0.0.2 is a control-plane endpoint (NATS)`,
      [`127.0.0.1:${workerPort}`]: `port ${workerPort} of 127.0.0.1 is a control-plane endpoint (the gateway's own port)`,
    };
    for (const [target, reason] of Object.entries(refusals)) {
      const tunnel = await connect(target, agent);
      expect(tunnel.status, target).toBe(403);
      expect(tunnel.text, target).toContain(reason);
    }
    expect(store.connections()).toBe(0);
  });

  it("an address in the operator's ranges is left to people, who see the addresses it reaches; autonomous mode opens it", async () => {
    const target = `127.0.0.2:${inRange.port}`;
    const asked = await worker({ allow: [], deny: [], autonomous: false });
    const decide = async (decision: Record<string, unknown>) => {
      const [request] = await waitFor('a network request', async () => {
        const open = await openRequests(asked.id);
        return open.length === 1 ? open : undefined;
      });
      expect(request!.data).toMatchObject({
        tool_name: 'network',
        input: { target, host: '127.0.0.2', port: inRange.port, addresses: ['127.0.0.2'] },
      });
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${asked.id}/control`,
        headers: asUser(alice),
        payload: { request_id: request!.data.request_id, ...decision },
      });
      expect(answer.statusCode).toBe(201);
    };
    const [allowed] = await Promise.all([connect(target, asked), decide({ decision: 'allow' })]);
    expect(allowed).toEqual({ status: 200, text: 'echo ping' });
    const [denied] = await Promise.all([connect(target, asked), decide({ decision: 'deny', message: 'not this one' })]);
    expect(denied).toEqual({ status: 403, text: `svc refused the connection to ${target}: not this one` });

    const autonomous = await worker({ allow: [], deny: [], autonomous: true });
    expect(await connect(target, autonomous)).toEqual({ status: 200, text: 'echo ping' });
    expect(inRange.connections()).toBe(2);
  });

  it('a person who is not an admin may not turn autonomous mode on for a built-in template: 403 naming the template and the key', async () => {
    const answer = await gw.app.inject({
      method: 'POST',
      url: '/v1/sessions',
      headers: asUser(alice),
      payload: { template: 'demo', overrides: { autonomous: true } },
    });
    expect(answer.statusCode).toBe(403);
    expect(answer.json()).toEqual({
      code: 'forbidden',
      message:
        'template demo lets only admins set overrides.autonomous (its [overrides] autonomous = "admins"): start the session without it, and people decide what the agent asks',
      details: { template: 'demo', key: 'overrides.autonomous', permitted: 'admins' },
    });
  });
});
