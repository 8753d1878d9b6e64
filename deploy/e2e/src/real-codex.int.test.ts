import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent, Worker } from '@svc/protocol';
import { startMockOpenAI, waitFor, type MockOpenAI, type ResponsesTurn } from '@svc/test-support';
import { processesWithEnv } from './host-processes.js';
import { controlClient, startSidecarWith } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';

const WORKSPACE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/** The release to test, from the one place that pins it. */
const VERSION = /CODEX_VERSION=(\S+)/.exec(readFileSync(path.join(WORKSPACE, '.ci/versions.env'), 'utf8'))![1]!;

function codexBinary(): string {
  const binary = path.join(WORKSPACE, `.cache/agents/codex-${VERSION}/node_modules/.bin/codex`);
  if (!existsSync(binary)) throw new Error(`Codex ${VERSION} is not installed at ${binary}; run: bash deploy/dev-setup.sh`);
  return binary;
}

/** The model key: the gateway's only. */
const MODEL_KEY = `sk-proj-e2e-${randomBytes(8).toString('hex')}`;

const ESCALATED: [ResponsesTurn, ResponsesTurn] = [{ text: 'I will create out.txt.', command: { cmd: 'echo hello > out.txt', escalate: true, justification: 'Write out.txt' } }, { text: 'Done.' }];
const SANDBOXED: [ResponsesTurn, ResponsesTurn] = [{ text: 'I will create out.txt.', command: { cmd: 'echo hello > out.txt' } }, { text: 'Done.' }];

/**
 * The real Codex CLI under the real sidecar against the real control plane; only the model is a
 * stand-in (`startMockOpenAI`, the Responses API on loopback): its first turn calls Codex's
 * `exec_command` tool to write out.txt, its second says it is done. Interactive workers run
 * `codex app-server` (the command asks to leave the sandbox, so Codex asks for approval);
 * autonomous ones run `codex exec`.
 */
describe(`the real Codex ${VERSION} under svc-sidecar`, () => {
  let stack: E2eStack;
  let dir: string;
  let userToken: string;
  const mocks: MockOpenAI[] = [];

  /** The model behind the gateway's model proxy (sessions through the API). */
  let proxied: MockOpenAI;
  let templatesDir: string;

  beforeAll(async () => {
    proxied = await startMockOpenAI(ESCALATED);
    mocks.push(proxied);
    templatesDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-codex-templates-'));
    // Interactive Codex (app-server) through the model proxy; `gpt-5.5` is in Codex's catalog.
    await writeFile(path.join(templatesDir, 'codex-interactive.toml'), ['[agent]', 'command = "codex"', 'cwd = "/workspace"', 'args = ["-c", "model=\\"gpt-5.5\\"", "-c", "check_for_update_on_startup=false"]', '[model]', 'api = "openai"', '[sidecar]', 'adapter = "codex"', ''].join('\n'));
    const installed = path.dirname(path.dirname(path.dirname(codexBinary())));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: { SVC_TEMPLATES_DIR: templatesDir, SVC_SANDBOX_HOST_DIRS: installed, SVC_SANDBOX_PATH: `${path.join(installed, 'node_modules/.bin')}:/usr/local/bin:/usr/bin:/bin` },
      gatewayEnv: { SVC_OPENAI_API_KEY: MODEL_KEY, SVC_OPENAI_UPSTREAM_URL: new URL(proxied.url).origin },
    });
    // Not under /tmp (where a CI checkout may be): Codex's sandbox helper refuses a CODEX_HOME
    // there, and `exec --sandbox workspace-write` then cannot write (AGENTS.md).
    await mkdir(path.join(homedir(), '.cache'), { recursive: true });
    dir = await mkdtemp(path.join(homedir(), '.cache', 'svc-e2e-codex-'));
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), ...mocks.map((mock) => mock.stop())]);
    if (dir) await rm(dir, { recursive: true, force: true });
    if (templatesDir) await rm(templatesDir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, userToken);

  async function run(name: string, turns: [ResponsesTurn, ResponsesTurn], extra: Record<string, unknown>, args: string[] = []) {
    const mock = await startMockOpenAI(turns);
    mocks.push(mock);
    const worker = await stack.createWorker('e2e-user');
    const workspace = path.join(dir, name);
    const home = path.join(dir, `${name}-home`);
    await Promise.all([workspace, home].map((d) => mkdir(d, { recursive: true })));
    await writeFile(
      path.join(home, 'config.toml'),
      ['model = "gpt-5.5"', 'model_provider = "mock"', 'check_for_update_on_startup = false', '', '[model_providers.mock]', 'name = "Mock OpenAI"', `base_url = "${mock.url}"`, 'wire_api = "responses"', 'env_key = "OPENAI_API_KEY"', 'request_max_retries = 1', 'stream_max_retries = 1', ''].join('\n'),
    );
    const config = {
      adapter: 'codex',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      agent: { command: codexBinary(), args, cwd: workspace, prompt: 'Create out.txt containing hello, using the shell.', env: { CODEX_HOME: home, OPENAI_API_KEY: 'sk-test' } },
      decision_wait_ms: 5000,
      ...extra,
    };
    const sidecar = await startSidecarWith(dir, name, config);
    const events = () => api().events(worker.worker_id);
    return { worker, exited: sidecar.exited, events, mock, outFile: path.join(workspace, 'out.txt'), stderr: sidecar.stderr };
  }

  const openRequests = (workerId: string) => api().openRequests(workerId);
  const decide = (workerId: string, body: Record<string, unknown>) => api().decide(workerId, body);
  /** What the model got back for its tool call (the next request's function_call_output). */
  const toolOutputSeen = (mock: MockOpenAI) => JSON.stringify(mock.requests().at(-1)?.['input'] ?? []);

  it('a command that needs approval: the request shows through the API, a person allows it, the command really runs', async () => {
    const agent = await run('approve', ESCALATED, { autonomous: false });
    const [request] = await waitFor('the open request', async () => ((await openRequests(agent.worker.worker_id)).length === 1 ? openRequests(agent.worker.worker_id) : undefined), 60_000, 100);
    expect(request!.data).toMatchObject({ tool_name: 'command_execution', description: 'Write out.txt' });
    expect(JSON.stringify(request!.data.input)).toContain('echo hello > out.txt');
    expect((await decide(agent.worker.worker_id, { request_id: request!.data.request_id, decision: 'allow' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    const types = (await agent.events()).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['control_request', 'control_response', 'tool_use', 'tool_result', 'result', 'progress']));
  }, 90_000);

  it('through the session API in a sealed bubblewrap sandbox, via the model proxy: approved, the command runs; the upstream saw the real key; the meter matches it', async () => {
    const session = await api().createSession({ template: 'codex-interactive', prompt: 'Create out.txt containing hello, using the shell.' });
    const request = await api().oneOpenRequest(session.worker_id);
    expect(request.data).toMatchObject({ tool_name: 'command_execution' });
    for (const environ of processesWithEnv('SVC_SIDECAR_CONFIG=')) expect(environ).not.toContain(MODEL_KEY);
    expect((await decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('the session completed', async () => (await api().get<{ status: string }>(`/v1/sessions/${session.id}`)).status === 'completed', 60_000, 100);
    expect(await readFile(path.join(stack.sandboxesDir, session.worker_id, 'root/workspace/out.txt'), 'utf8')).toBe('hello\n');
    const seen = proxied.requestHeaders();
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const headers of seen) expect(headers['authorization']).toBe(`Bearer ${MODEL_KEY}`);
    // The stand-in's usage: 1000 in (200 cached), 50 out, per response.
    // The usage of a worker without a budget is written within 250 ms of its last response.
    const worker = await waitFor('the usage written', async () => {
      const view = await api().get<Worker>(`/v1/workers/${session.worker_id}`);
      return view.model_usage?.input_tokens === 1000 * seen.length ? view : undefined;
    });
    expect(worker.model_usage).toMatchObject({ input_tokens: 1000 * seen.length, output_tokens: 50 * seen.length, cache_read_tokens: 200 * seen.length });
    expect(JSON.stringify(await api().events(session.worker_id))).not.toContain(MODEL_KEY);
  }, 90_000);

  it('a session budget below two turns: the proxy refuses the second model request (the provider\'s insufficient_quota), Codex stops, the history shows the cap', async () => {
    const session = await api().createSession({ template: 'codex-interactive', prompt: 'Create out.txt containing hello, using the shell.', overrides: { budget: { max_tokens: 50 } } });
    const request = await api().oneOpenRequest(session.worker_id);
    const before = proxied.requests().length;
    const started = Date.now();
    expect((await decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('the session ended', async () => ['completed', 'failed'].includes((await api().get<{ status: string }>(`/v1/sessions/${session.id}`)).status), 60_000, 100).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(await api().events(session.worker_id), null, 1)}`);
    });
    // Codex takes insufficient_quota as final: no retries for a minute.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(proxied.requests().length).toBe(before);
    const history = await api().events(session.worker_id);
    expect(history.some((e) => e.type === 'system' && (e.data as { subtype?: string }).subtype === 'model_budget_exhausted')).toBe(true);
    const worker = await api().get<Worker>(`/v1/workers/${session.worker_id}`);
    expect(worker.model_usage).toMatchObject({ budget_exhausted: true });
    expect(worker.model_usage!.refused).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('deny: the command does not run and the model is told it was rejected', async () => {
    const agent = await run('deny', ESCALATED, { autonomous: false });
    const [request] = await waitFor('the open request', async () => ((await openRequests(agent.worker.worker_id)).length === 1 ? openRequests(agent.worker.worker_id) : undefined), 60_000, 100);
    expect((await decide(agent.worker.worker_id, { request_id: request!.data.request_id, decision: 'deny', message: 'Not in this directory, please.' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    expect(toolOutputSeen(agent.mock)).toMatch(/rejected/i);
    const result = (await agent.events()).find((e): e is StoredEvent<'tool_result'> => e.type === 'tool_result');
    expect(result!.data).toMatchObject({ is_error: true });
  }, 90_000);

  it('autonomous (codex exec): no prompt, the command runs', async () => {
    // The template's arguments give exec its sandbox (its default is read-only).
    const agent = await run('autonomous', SANDBOXED, { autonomous: true, permissions: { auto_approve: ['command_execution'], deny: [], ask: [] } }, ['--sandbox', 'workspace-write']);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    const types = (await agent.events()).map((e) => e.type);
    expect(types).not.toContain('control_request');
    expect(types).toEqual(expect.arrayContaining(['tool_use', 'tool_result', 'result']));
  }, 90_000);

  it('a tool on the deny list is refused without a prompt; the history records the policy\'s decision', async () => {
    const agent = await run('deny-list', ESCALATED, { autonomous: false, permissions: { auto_approve: [], deny: ['command_execution'], ask: [] } });
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    const decision = (await agent.events()).find((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(decision!.data).toMatchObject({ decision: 'deny', decided_by: 'policy' });
    expect(await openRequests(agent.worker.worker_id)).toEqual([]);
  }, 90_000);
});
