import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditRecord, EventData, ListResponseOf, PermissionRule, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startMockAnthropic, type MockAnthropic } from '@svc/test-support/stand-ins';
import { listenOnHost, type HostListener } from './host-listener.js';
import { startStack, type E2eStack } from './stack.js';

/** The agent: a shell script that attacks its one channel (agents/red-team.sh). */
const RED_TEAM_SCRIPT = readFileSync(fileURLToPath(new URL('../agents/red-team.sh', import.meta.url)), 'utf8');

/**
 * The red team (docs/sandbox-security.md, "Threats"): an agent in a sealed bubblewrap sandbox,
 * nobody watching, turns on its one channel. Each attack must fail, and nothing may be stored,
 * forwarded or decided because of it.
 */
describe('red team: an agent in a sealed local sandbox attacks its one channel', () => {
  let stack: E2eStack;
  let mock: MockAnthropic;
  let templatesDir: string;
  let admin: string;
  let loopback: HostListener;
  let workerId: string;
  let findings: string[];

  beforeAll(async () => {
    loopback = await listenOnHost('127.0.0.1');
    mock = await startMockAnthropic([{ text: 'unused' }]);
    templatesDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-red-team-'));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: { SVC_TEMPLATES_DIR: templatesDir },
      gatewayEnv: { SVC_ANTHROPIC_API_KEY: 'sk-ant-red-team-key', SVC_ANTHROPIC_UPSTREAM_URL: mock.url },
    });
    await writeFile(
      path.join(templatesDir, 'red-team.toml'),
      `
[agent]
command = "/workspace/red-team.sh"
cwd = "/workspace"
env = { LOOPBACK_PORT = "${loopback.port}" }

[model]
api = "anthropic"

[[files]]
path = "/workspace/red-team.sh"
mode = 0o755
content = ${JSON.stringify(RED_TEAM_SCRIPT)}

[sidecar]
adapter = "generic"
decision_timeout_s = 600
`,
    );
    admin = await stack.userToken('red-team-admin', { svc_admin: true });

    const session = await api<{ id: string; worker_id: string }>('POST', '/v1/sessions', { template: 'red-team' });
    workerId = session.worker_id;
    // The agent asks "network" for the loopback port itself; a person allows it, always.
    await waitFor('the agent waiting for a rule', async () => (await lines()).includes("waiting for a person's rule"), 60_000, 100).catch(
      async (err: unknown) => {
        throw new Error(`${String(err)}\n${JSON.stringify(await lines())}\n${stack.outputs()}`);
      },
    );
    const allowed = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/control`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: 'net_forged', decision: 'allow', scope: 'always' }),
    });
    expect(allowed.status).toBe(201);
    findings = await waitFor(
      'the red team done',
      async () => {
        const seen = await lines();
        return seen.includes('red team done') ? seen : undefined;
      },
      90_000,
      100,
    );
  }, 240_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), mock?.stop(), loopback?.close()]);
    if (templatesDir) await rm(templatesDir, { recursive: true, force: true });
  });

  async function api<T>(method: string, url: string, body?: unknown): Promise<T> {
    const response = await fetch(`${stack.gatewayUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }
  const events = async () => (await api<ListResponseOf<StoredEvent>>('GET', `/v1/workers/${workerId}/sdk-events?limit=1000`)).items;
  /** What the agent printed, line by line (`<attack> <outcome>`). */
  async function lines(): Promise<string[]> {
    return (await events())
      .filter((e): e is StoredEvent<'system'> => e.type === 'system' && (e.data as EventData<'system'>).stream === 'stdout')
      .map((e) => e.data.message.trim());
  }
  const outcome = (attack: string) => findings.find((line) => line.startsWith(`${attack} `))?.slice(attack.length + 1);

  it('red team — no token from the built-in issuer through the socket, with no code or a guessed one', () => {
    expect(outcome('local-token')).toBe('404');
    expect(outcome('local-token-guess')).toBe('404');
  });

  it("red team — a person's routes do not exist through the socket (sessions, status, docs, events, decisions, audit)", () => {
    for (const attack of ['route-sessions', 'route-status', 'route-openapi', 'route-events', 'route-decide', 'route-audit'])
      expect(outcome(attack), attack).toBe('404');
  });

  it('red team — a forged person\'s decision, an "always" or a reserved uid is refused (403): not stored, no rule of the worker\'s, no audit record', async () => {
    expect(outcome('ask')).toBe('202');
    for (const attack of ['forge-person-always', 'forge-person', 'forge-always', 'forge-reserved-uid']) expect(outcome(attack), attack).toBe('403');
    const decisions = (await events()).filter((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    // The one decision on the request is the person's.
    expect(decisions.map((d) => [d.data.request_id, d.source])).toEqual([['net_forged', 'user:api:red-team-admin']]);
    const rules = await api<ListResponseOf<PermissionRule>>('GET', `/v1/workers/${workerId}/permission-rules`);
    expect(rules.items.map((rule) => rule.added_by)).toEqual(['red-team-admin']);
    const audit = await api<ListResponseOf<AuditRecord>>('GET', '/v1/audit?limit=1000');
    expect(audit.items.filter((record) => record.worker_id === workerId && record.action !== 'session_started').map((r) => [r.action, r.actor])).toEqual([
      ['decision', 'red-team-admin'],
      ['rule_added', 'red-team-admin'],
    ]);
  });

  it('red team — the host\'s loopback stays out of reach through the egress proxy, however spelled, even after a person allowed it "always"', () => {
    for (const attack of ['connect-loopback', 'connect-loopback-spelled', 'connect-loopback-after-allow'])
      expect(outcome(attack), attack).toMatch(/^HTTP\/1\.1 403 /);
    // Past the sidecar's proxy, straight to the gateway with the worker's token: the same.
    expect(outcome('connect-direct-after-allow')).toBe('403');
    expect(loopback.accepted()).toBe(0);
  });

  it('red team — the model key is used for inference only: files, deletes, batches, dot segments and encoded slashes never reach the upstream', () => {
    for (const attack of ['model-files', 'model-delete', 'model-batches', 'model-dot-dot', 'model-encoded']) expect(outcome(attack), attack).toMatch(/^4\d\d$/);
    expect(mock.seen()).toEqual([]);
  });
});
