import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startMockAnthropic, type MockAnthropic } from '@svc/test-support/stand-ins';
import { processesWithEnv } from '../host-processes.js';
import { claudeAgent, claudeBinary, CLAUDE_CODE_VERSIONS, sandboxEnvFor } from '@svc/test-support/real-agents';
import { controlClient, startSidecarWith } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

const TOOL_INPUT = { command: 'echo hello > out.txt', description: 'Write hello to out.txt' };
/** The model key: the gateway's only. */
const MODEL_KEY = `sk-ant-e2e-${randomBytes(8).toString('hex')}`;

/**
 * The real Claude Code CLI under the real sidecar against the real control plane; only the
 * model is a stand-in (`startMockAnthropic`, on loopback): its first turn asks to run
 * `echo hello > out.txt` with Bash, its second says it is done.
 */
describe.each(CLAUDE_CODE_VERSIONS)('the real Claude Code %s under svc-sidecar', (version) => {
  let stack: E2eStack;
  let mock: MockAnthropic;
  let dir: string;
  let userToken: string;

  beforeAll(async () => {
    mock = await startMockAnthropic([{ text: 'I will create out.txt.', tool: { name: 'Bash', input: TOOL_INPUT } }, { text: 'Done.' }]);
    // The built-in `claude` template reaches this Claude Code through the session service's
    // settings; the model key is the gateway's alone (the model proxy adds it).
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: {
        ...sandboxEnvFor(claudeBinary(version)),
      },
      gatewayEnv: { SVC_ANTHROPIC_API_KEY: MODEL_KEY, SVC_ANTHROPIC_UPSTREAM_URL: mock.url },
    });
    dir = await mkdtemp(path.join(tmpdir(), `svc-real-claude-${version}-`));
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), mock?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, userToken);
  const get = <T>(url: string) => api().get<T>(url);

  async function run(name: string, extra: Record<string, unknown>, mode: 'one_shot' | 'conversation' = 'one_shot') {
    const worker = await stack.createWorker('e2e-user', { mode });
    const workspace = path.join(dir, name);
    const home = path.join(dir, `${name}-home`);
    await Promise.all([workspace, home].map((d) => mkdir(d, { recursive: true })));
    const config = {
      adapter: 'claude-code',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      agent: claudeAgent({ version, cwd: workspace, home, baseUrl: mock.url, prompt: 'Create out.txt containing hello' }),
      decision_wait_ms: 5000,
      ...extra,
    };
    const sidecar = await startSidecarWith(dir, name, config);
    const events = () => api().events(worker.worker_id);
    const outFile = path.join(workspace, 'out.txt');
    return { worker, exited: sidecar.exited, events, outFile, stderr: sidecar.stderr, pid: sidecar.pid };
  }

  const openRequests = (workerId: string) => api().openRequests(workerId);
  const decide = (workerId: string, body: Record<string, unknown>) => api().decide(workerId, body);

  it('a tool that needs approval: the request shows through the API, a person allows it, the tool really runs', async () => {
    const agent = await run('approve', {});
    const [request] = await waitFor(
      'the open request',
      async () => ((await openRequests(agent.worker.worker_id)).length === 1 ? openRequests(agent.worker.worker_id) : undefined),
      60_000,
      100,
    );
    expect(request!.data).toMatchObject({ tool_name: 'Bash', input: TOOL_INPUT });
    expect((await decide(agent.worker.worker_id, { request_id: request!.data.request_id, decision: 'allow' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    const types = (await agent.events()).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['control_request', 'control_response', 'tool_use', 'tool_result', 'result', 'progress']));
  }, 90_000);

  it("a conversation: three turns in one Claude Code process — a tool approved in the first, two people's messages after; the model's last request holds what was said in each", async () => {
    const agent = await run('conversation', { conversation: true }, 'conversation');
    const workerId = agent.worker.worker_id;
    const results = async () => (await agent.events()).filter((e) => e.type === 'result').length;
    const request = await api().oneOpenRequest(workerId);
    expect((await decide(workerId, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('turn 1 ended', async () => (await results()) === 1, 60_000, 100);
    const said = ['Now say something about the second turn.', 'And a third turn, please.'];
    for (const [index, text] of said.entries()) {
      const sent = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text }),
      });
      expect(sent.status).toBe(202);
      await waitFor(`turn ${index + 2} ended`, async () => (await results()) === index + 2, 60_000, 100);
    }
    // One conversation: the model's last request carries the first prompt and both messages.
    const last = JSON.stringify(mock.requests().at(-1)!['messages']);
    for (const text of ['Create out.txt containing hello', ...said]) expect(last).toContain(text);
    // The history: each person's message, in order, before the turn that answered it.
    const events = await agent.events();
    const messages = events.filter((e) => e.type === 'system' && (e.data as { subtype?: string }).subtype === 'person_message');
    expect(messages.map((e) => (e.data as { message: string }).message)).toEqual(said);
    const resultIds = events.filter((e) => e.type === 'result').map((e) => BigInt(e.id));
    expect(messages.map((e, n) => BigInt(e.id) > resultIds[n]! && BigInt(e.id) < resultIds[n + 1]!)).toEqual([true, true]);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    // Still up between turns: it ends when the sidecar is stopped.
    process.kill(agent.pid, 'SIGTERM');
    await agent.exited;
  }, 120_000);

  it('the built-in claude template: POST /v1/sessions runs it in a sealed bubblewrap sandbox through the model proxy; allowed, the tool runs there; then it waits for a message', async () => {
    const before = mock.requests().length;
    const session = await api().createSession({ template: 'claude', prompt: 'Create out.txt containing hello' });
    const request = await api().oneOpenRequest(session.worker_id);
    expect(request.data).toMatchObject({ tool_name: 'Bash', input: TOOL_INPUT });
    // While it waits: no process of the sandbox (the sidecar and everything it started) holds the key.
    const sandboxed = processesWithEnv(`SVC_SIDECAR_CONFIG=`);
    expect(sandboxed.length).toBeGreaterThanOrEqual(2);
    for (const environ of sandboxed) expect(environ).not.toContain(MODEL_KEY);
    // The agent's holds the placeholder.
    expect(sandboxed.filter((environ) => environ.includes(`ANTHROPIC_API_KEY=${PLACEHOLDER_MODEL_KEY}`)).length).toBeGreaterThanOrEqual(1);
    expect((await decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    // A conversation (the built-in template's mode): after its turn the agent waits, the session running.
    await waitFor('idle', async () => (await get<Worker>(`/v1/workers/${session.worker_id}`)).activity === 'idle', 60_000, 100);
    expect((await get<{ status: string }>(`/v1/sessions/${session.id}`)).status).toBe('running');
    expect(await readFile(path.join(stack.sandboxesDir, session.worker_id, 'root/workspace/out.txt'), 'utf8')).toBe('hello\n');

    // The upstream saw the real key on every request, and the proxy's meter matches its figures (100 in, 24 out per message).
    const seen = mock.requestHeaders().slice(before);
    expect(seen.length).toBeGreaterThanOrEqual(2);
    for (const headers of seen) {
      expect(headers['x-api-key']).toBe(MODEL_KEY);
      expect(headers['authorization']).toBeUndefined();
    }
    // The usage of a worker without a budget is written within 250 ms of its last response.
    const worker = await waitFor('the usage written', async () => {
      const view = await get<Worker>(`/v1/workers/${session.worker_id}`);
      return view.model_usage?.input_tokens === 100 * seen.length ? view : undefined;
    });
    expect(worker.model_usage).toMatchObject({ input_tokens: 100 * seen.length, output_tokens: 24 * seen.length, refused: 0 });
    // 2.1.197 also sends `HEAD /`: forwarded and counted as a request, with no tokens.
    expect(worker.model_usage!.requests).toBeGreaterThanOrEqual(seen.length);
    const measured = await waitFor("the proxy's progress event", async () => {
      const found = (await api().events(session.worker_id)).filter(
        (e): e is StoredEvent<'progress'> => e.type === 'progress' && e.data.measured_by === 'model_proxy',
      );
      return found.at(-1)?.data.input_tokens === 100 * seen.length ? found : undefined;
    });
    expect(measured.at(-1)!.data).toMatchObject({ input_tokens: 100 * seen.length, output_tokens: 24 * seen.length });
    expect(JSON.stringify(await api().events(session.worker_id))).not.toContain(MODEL_KEY);
  }, 90_000);

  it("a session budget below what two turns need: the proxy refuses the second model request, the agent ends with the provider's error, the history and totals show the cap", async () => {
    const session = await api().createSession({ template: 'claude', prompt: 'Create out.txt containing hello', overrides: { budget: { max_tokens: 50 } } });
    const request = await api().oneOpenRequest(session.worker_id);
    const before = mock.requests().length;
    expect((await decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    // The turn ends with the provider's error; the conversation waits for a message.
    await waitFor('idle after the refused turn', async () => (await get<Worker>(`/v1/workers/${session.worker_id}`)).activity === 'idle', 60_000, 100);
    // The second turn never reached the model.
    expect(mock.requests().length).toBe(before);
    const history = await api().events(session.worker_id);
    const refusal = history.find((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.subtype === 'model_budget_exhausted');
    expect(refusal!.data.message).toContain('max_tokens 50');
    const result = history.filter((e): e is StoredEvent<'result'> => e.type === 'result').at(-1);
    expect(result!.data.is_error).toBe(true);
    expect(JSON.stringify(result!.data)).toContain('budget is used up');
    const worker = await get<Worker>(`/v1/workers/${session.worker_id}`);
    expect(worker.model).toMatchObject({ budget: { max_tokens: 50 } });
    expect(worker.model_usage).toMatchObject({ input_tokens: 100, output_tokens: 24, budget_exhausted: true });
    expect(worker.model_usage!.refused).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('deny: the tool does not run and the agent receives the message', async () => {
    const agent = await run('deny', {});
    const [request] = await waitFor(
      'the open request',
      async () => ((await openRequests(agent.worker.worker_id)).length === 1 ? openRequests(agent.worker.worker_id) : undefined),
      60_000,
      100,
    );
    expect(
      (await decide(agent.worker.worker_id, { request_id: request!.data.request_id, decision: 'deny', message: 'Not in this directory, please.' })).status,
    ).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    const result = (await agent.events()).find((e): e is StoredEvent<'tool_result'> => e.type === 'tool_result');
    expect(result!.data).toMatchObject({ is_error: true });
    expect(result!.data.content).toContain('Not in this directory, please.');
  }, 90_000);

  it('autonomous with auto_approve: no prompt, the tool runs, and the history shows the policy allowed it', async () => {
    const agent = await run('autonomous', { autonomous: true, permissions: { auto_approve: ['Bash(echo *)'], deny: [], ask: [] } });
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    const decision = (await agent.events()).find((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(decision!.data).toMatchObject({ decision: 'allow', decided_by: 'policy' });
  }, 90_000);

  it('a tool on the deny list is refused without a prompt', async () => {
    const agent = await run('deny-list', { permissions: { auto_approve: [], deny: ['Bash'], ask: [] } });
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    const decision = (await agent.events()).find((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(decision!.data).toMatchObject({ decision: 'deny', decided_by: 'policy' });
    expect(await openRequests(agent.worker.worker_id)).toEqual([]);
  }, 90_000);
});
