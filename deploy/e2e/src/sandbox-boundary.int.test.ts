import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type EventData, type ListResponseOf, type StoredEvent } from '@svc/protocol';
import { startGitServer, waitFor, type GitServer } from '@svc/test-support';
import { startMockAnthropic, type MockAnthropic } from '@svc/test-support/stand-ins';
import { listenOnHost, type HostListener } from './host-listener.js';
import { startStack, type E2eStack } from './stack.js';

/** The agent: a shell script that looks around (agents/sandbox-probe.sh). */
const PROBE_SCRIPT = readFileSync(fileURLToPath(new URL('../agents/sandbox-probe.sh', import.meta.url)), 'utf8');

/** This machine's first non-loopback IPv4 address. */
function lanAddress(): string {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry && entry.family === 'IPv4' && !entry.internal);
  if (!address) throw new Error('this machine has no non-loopback IPv4 address to probe');
  return address.address;
}

const portOf = (url: string) => new URL(url).port;

describe('the sandbox boundary: a probe inside a sealed local sandbox (bubblewrap), on a cloned repository', () => {
  const modelKey = `sk-ant-svc-probe-${randomBytes(12).toString('hex')}`;
  let stack: E2eStack;
  let mock: MockAnthropic;
  let templatesDir: string;
  let token: string;
  let loopbackListener: HostListener;
  let lanListener: HostListener;
  /** The workspace's repository, whose token only the control plane is given (SVC_GIT_CREDENTIALS). */
  let forge: GitServer;

  beforeAll(async () => {
    const lan = lanAddress();
    [loopbackListener, lanListener, mock, forge] = await Promise.all([
      listenOnHost('127.0.0.1'),
      listenOnHost(lan),
      startMockAnthropic([{ text: 'unused' }, { text: 'unused' }]),
      startGitServer(),
    ]);
    forge.createRepository('probe', { 'README.md': 'the probed repository\n' });
    const gitCredentials = { SVC_GIT_CREDENTIALS: JSON.stringify({ [new URL(forge.url).host]: forge.token }) };
    templatesDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-probe-'));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: { SVC_TEMPLATES_DIR: templatesDir, ...gitCredentials },
      gatewayEnv: { SVC_ANTHROPIC_API_KEY: modelKey, SVC_ANTHROPIC_UPSTREAM_URL: mock.url, ...gitCredentials },
    });
    const targets = {
      nats: `127.0.0.1:${portOf(stack.env['SVC_NATS_URL']!)}`,
      store: `127.0.0.1:${portOf(stack.env['SVC_DATABASE_URL']!)}`,
      gateway: `127.0.0.1:${portOf(stack.gatewayUrl)}`,
      'host-loopback': `127.0.0.1:${loopbackListener.port}`,
      'host-lan': `${lan}:${lanListener.port}`,
    };
    const template = `
[agent]
command = "/workspace/probe.sh"
cwd = "/workspace"
env = { PROBE_TARGETS = ${JSON.stringify(
      Object.entries(targets)
        .map(([name, address]) => `${name}=${address}`)
        .join(' '),
    )}, PROXY_TARGETS = ${JSON.stringify(`host-loopback=${targets['host-loopback']} nats=${targets.nats}`)} }

[model]
api = "anthropic"

[workspace]
repo = "${forge.url}/probe.git"

# Listed, so reached through the gateway without asking: the loopback listener, and NATS, which
# is refused all the same.
[sandbox]
egress = [${JSON.stringify(targets['host-loopback'])}, ${JSON.stringify(targets.nats)}]

[[files]]
path = "/workspace/probe.sh"
mode = 0o755
content = ${JSON.stringify(PROBE_SCRIPT)}

[sidecar]
adapter = "claude-code"
`;
    await writeFile(path.join(templatesDir, 'probe.toml'), template);
    token = await stack.userToken('e2e-prober');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), mock?.stop(), loopbackListener?.close(), lanListener?.close(), forge?.stop()]);
    if (templatesDir) await rm(templatesDir, { recursive: true, force: true });
  });

  const api = async <T>(method: string, url: string, body?: unknown): Promise<T> => {
    const response = await fetch(`${stack.gatewayUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };

  it('the agent finds no key nor the repository token and reaches nothing but loopback; its events arrive and a decision reaches it', async () => {
    const session = await api<{ id: string; worker_id: string }>('POST', '/v1/sessions', { template: 'probe' });
    const events = async () => (await api<ListResponseOf<StoredEvent>>('GET', `/v1/workers/${session.worker_id}/sdk-events?limit=1000`)).items;
    const said = async () => (await events()).filter((e): e is StoredEvent<'assistant'> => e.type === 'assistant').map((e) => e.data.text);

    const [request] = await waitFor(
      "the probe's tool request",
      async () => {
        const open = await api<ListResponseOf<StoredEvent<'control_request'>>>('GET', `/v1/workers/${session.worker_id}/control/requests`);
        return open.items.length === 1 ? open.items : undefined;
      },
      60_000,
      100,
    ).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(await events(), null, 1)}\n${stack.outputs()}`);
    });
    const findings = await said();
    expect(findings).toContain('probe done');

    // Every TCP connection out of the sandbox failed; through the egress proxy the listed
    // listener was reached (its one connection), and NATS was refused though listed.
    for (const target of ['nats', 'store', 'gateway', 'host-loopback', 'host-lan']) expect(findings, target).toContain(`tcp ${target} refused`);
    expect(findings).toContain('proxy host-loopback HTTP/1.1 200 Connection Established');
    expect(findings).toContain('proxy nats HTTP/1.1 403 Refused');
    expect(loopbackListener.accepted()).toBe(1);
    expect(lanListener.accepted()).toBe(0);

    // No key in its environment (the model API's variables hold the proxy and a placeholder), its
    // files (`.git/config` among them) or any process's environment — the repository's token
    // neither, though the probe fetched from the repository through the sidecar's git proxy.
    expect(findings).toContain('git fetch exit 0');
    expect(forge.requests().filter((request) => !request.authorized)).toEqual([]);
    expect(findings).toContain(`env ANTHROPIC_API_KEY=${PLACEHOLDER_MODEL_KEY}`);
    expect(findings.find((line) => line.startsWith('env ANTHROPIC_BASE_URL='))).toMatch(/^env ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+\/anthropic$/);
    expect(findings.filter((line) => line.startsWith('key-like text in '))).toEqual([]);
    expect(findings).toContain('environ of every process: 0 key-like lines');
    const secrets = { modelKey, repositoryToken: forge.token };
    for (const [name, secret] of Object.entries(secrets)) {
      expect(JSON.stringify(await events()), name).not.toContain(secret);
      // Nor anywhere in the sandbox's files, as the host sees them, the services' logs or the API's answers.
      const sandboxDir = path.join(stack.sandboxesDir, session.worker_id);
      for (const file of await filesUnder(sandboxDir)) expect(await readFile(file, 'utf8').catch(() => ''), `${name} in ${file}`).not.toContain(secret);
      expect(stack.outputs(), name).not.toContain(secret);
      for (const url of [`/v1/sessions/${session.id}`, `/v1/workers/${session.worker_id}`])
        expect(JSON.stringify(await api('GET', url)), `${name} in ${url}`).not.toContain(secret);
    }

    // The decision still reaches it, through the sealed channel.
    expect(
      (
        await fetch(`${stack.gatewayUrl}/v1/workers/${session.worker_id}/control`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ request_id: (request!.data as EventData<'control_request'>).request_id, decision: 'allow' }),
        })
      ).status,
    ).toBe(201);
    await waitFor('the decision arrived', async () => (await said()).includes('decision allow'), 30_000, 100);
    await waitFor(
      'the session completed',
      async () => (await api<{ status: string }>('GET', `/v1/sessions/${session.id}`)).status === 'completed',
      30_000,
      100,
    );
  }, 120_000);
});

/** Every regular file under `dir` (sockets and the like skipped). */
async function filesUnder(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...(await filesUnder(full)));
    else if (entry.isFile() && (await stat(full)).size < 64 * 1024 * 1024) found.push(full);
  }
  return found;
}
