import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type EgressPolicy, type ListResponseOf, type PermissionRule, type StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { standInAgent } from '@svc/test-support/stand-ins';
import { controlClient, startSidecarWith } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';

/** A TCP server on loopback that answers each line with "echo <line>" and counts its connections. */
async function startEchoServer(): Promise<{ target: string; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.on('data', (chunk) => socket.write(`echo ${chunk.toString()}`));
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    target: `127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connections: () => connections,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

interface Outcome {
  target: string;
  status: number;
  echo?: string;
  reason?: string;
}

describe('egress: the agent reaches what is listed; anything else is asked like a tool call; the control plane never', () => {
  let stack: E2eStack;
  let dir: string;
  let token: string;
  const servers: Array<Awaited<ReturnType<typeof startEchoServer>>> = [];

  beforeAll(async () => {
    // The echo servers listen on loopback, which no person may open unless the operator makes it
    // the outside (docs/egress.md "Addresses"); NATS and the store stay refused whatever is allowed.
    // (Loopback refused by default, however spelled and whoever allows it: red-team.int.test.ts.)
    stack = await startStack({ ingestReplicas: 1, gatewayEnv: { SVC_EGRESS_ALLOWED_CIDRS: '127.0.0.0/8' } });
    dir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-egress-'));
    token = await stack.userToken('e2e-user');
    for (let i = 0; i < 4; i++) servers.push(await startEchoServer());
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), ...servers.map((server) => server.close())]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, token);
  const natsTarget = () => `127.0.0.1:${new URL(stack.env['SVC_NATS_URL']!).port}`;

  /** A worker with `egress`, and its sidecar running the egress client over `targets`. */
  async function run(name: string, egress: EgressPolicy, targets: string[]) {
    const worker = await stack.createWorker('e2e-user', { egress });
    const sidecar = await startSidecarWith(dir, name, {
      adapter: 'generic',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      egress_proxy: true,
      decision_wait_ms: 5000,
      agent: { command: process.execPath, args: [standInAgent('egress-client')], env: { EGRESS_TARGETS: targets.join(' ') } },
    });
    const outcomes = async () =>
      (await api().events(worker.worker_id))
        .filter((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.message.startsWith('{"target"'))
        .map((e) => JSON.parse(e.data.message) as Outcome);
    return { worker, sidecar, outcomes };
  }

  it('listed: through at once; unlisted: a network control_request — allowed goes through, denied is refused, "always" is asked once; NATS is refused though listed', async () => {
    const [listed, allowed, denied, always] = servers.map((server) => server.target) as [string, string, string, string];
    const agent = await run('interactive', { allow: [listed, natsTarget()], deny: [], autonomous: false }, [
      listed,
      allowed,
      denied,
      always,
      always,
      natsTarget(),
    ]);

    const answers: Array<[string, Record<string, unknown>]> = [
      [allowed, { decision: 'allow' }],
      [denied, { decision: 'deny', message: 'not this one' }],
      [always, { decision: 'allow', scope: 'always', input_pattern: always }],
    ];
    for (const [target, decision] of answers) {
      const request = await api().oneOpenRequest(agent.worker.worker_id);
      // The person sees the address the tunnel would reach.
      expect(request.data).toMatchObject({ tool_name: 'network', input: { target, addresses: ['127.0.0.1'] } });
      expect((await api().decide(agent.worker.worker_id, { request_id: request.data.request_id, ...decision })).status).toBe(201);
    }
    expect(await agent.sidecar.exited, agent.sidecar.stderr()).toBe(0);

    const outcomes = await waitFor('every outcome stored', async () => {
      const found = await agent.outcomes();
      return found.length === 6 ? found : undefined;
    });
    expect(outcomes.map((o) => [o.target, o.status, o.echo])).toEqual([
      [listed, 200, 'echo ping'],
      [allowed, 200, 'echo ping'],
      [denied, 403, undefined],
      [always, 200, 'echo ping'],
      [always, 200, 'echo ping'],
      [natsTarget(), 403, undefined],
    ]);
    expect(outcomes[2]!.reason).toContain('not this one');
    expect(outcomes[5]!.reason).toMatch(/is a control-plane endpoint \(NATS\)/);
    expect(servers[2]!.connections()).toBe(0);

    // Three questions (allowed, denied, always once), every tunnel recorded, the rule kept.
    const history = await api().events(agent.worker.worker_id);
    expect(history.filter((e) => e.type === 'control_request').map((e) => (e.data as unknown as { input: { target: string } }).input.target)).toEqual([
      allowed,
      denied,
      always,
    ]);
    const recorded = history.filter((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.subtype === 'egress');
    expect(recorded).toHaveLength(6);
    expect(recorded.map((e) => e.data.details?.['decision'])).toEqual(['allow', 'allow', 'deny', 'allow', 'allow', 'deny']);
    // (Its token is revoked now that its agent has ended: the control service answers directly.)
    const rules = await requestJson<ListResponseOf<PermissionRule>>(stack.nc, subjects.rpc.permissionRules, { worker_id: agent.worker.worker_id });
    expect(rules.items).toEqual([expect.objectContaining({ tool_name: 'network', input_pattern: always, decision: 'allow' })]);
  }, 90_000);

  it("autonomous: an unlisted target gets the policy's answer at once, recorded; the template's deny rule still binds", async () => {
    const [open, refused] = [servers[0]!.target, servers[1]!.target];
    const agent = await run('autonomous', { allow: [], deny: [`network(${refused})`], autonomous: true }, [open, refused]);
    expect(await agent.sidecar.exited, agent.sidecar.stderr()).toBe(0);
    const outcomes = await waitFor('both outcomes stored', async () => {
      const found = await agent.outcomes();
      return found.length === 2 ? found : undefined;
    });
    expect(outcomes.map((o) => [o.target, o.status])).toEqual([
      [open, 200],
      [refused, 403],
    ]);
    expect(outcomes[1]!.reason).toContain(`denied by the template's rule network(${refused})`);
    const decision = (await api().events(agent.worker.worker_id)).find((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(decision!.data).toMatchObject({ decision: 'allow', decided_by: 'policy' });
  }, 60_000);

  it("a tunnel asked of the gateway directly is decided the same way: another worker's token is 401, a worker without egress is refused", async () => {
    const [listed] = [servers[0]!.target];
    const owner = await stack.createWorker('e2e-user', { egress: { allow: [listed], deny: [], autonomous: false } });
    const other = await stack.createWorker('e2e-user');
    const connect = (workerId: string, workerToken: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(new URL(stack.gatewayUrl).port), '127.0.0.1', () => {
          socket.write(`CONNECT ${listed} HTTP/1.1\r\nhost: ${listed}\r\nauthorization: Bearer ${workerToken}\r\nx-svc-worker-id: ${workerId}\r\n\r\n`);
        });
        let text = '';
        socket.on('data', (chunk) => {
          text += chunk.toString();
          if (text.includes('\r\n\r\n')) {
            socket.destroy();
            resolve(text.split('\r\n')[0]!);
          }
        });
        socket.on('error', reject);
      });
    expect(await connect(owner.worker_id, other.token)).toBe('HTTP/1.1 401 Unauthorized');
    expect(await connect(other.worker_id, other.token)).toBe('HTTP/1.1 403 Forbidden');
    expect(await connect(owner.worker_id, owner.token)).toBe('HTTP/1.1 200 Connection Established');
  }, 30_000);
});
