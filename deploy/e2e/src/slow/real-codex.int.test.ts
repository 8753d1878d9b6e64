import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventData, ListResponseOf, PermissionRule, StoredEvent, Worker } from '@svc/protocol';
import { TINY_PNG_BASE64, waitFor } from '@svc/test-support';
import { addFilePatch, startMockOpenAI, type MockOpenAI, type MockOpenAIOptions, type ResponsesTurn } from '@svc/test-support/stand-ins';
import { processesWithEnv } from '../host-processes.js';
import { codexAgent, codexBinary, codexTemplate, CODEX_VERSION, sandboxEnvFor } from '@svc/test-support/real-agents';
import { controlClient, startSidecarWith } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

/** The model key: the gateway's only. */
const MODEL_KEY = `sk-proj-e2e-${randomBytes(8).toString('hex')}`;

const ESCALATED: ResponsesTurn[] = [
  { text: 'I will create out.txt.', command: { cmd: 'echo hello > out.txt', escalate: true, justification: 'Write out.txt' } },
  { text: 'Done.' },
];
const PATCH: ResponsesTurn[] = [{ text: 'I will add hello.txt.', patch: addFilePatch('hello.txt', ['hello']) }, { text: 'Done.' }];
/** The same escalation twice in one conversation: after acceptForSession the second is not asked. */
const SAME_ESCALATION_TWICE: ResponsesTurn[] = [
  { text: 'Appending once.', command: { cmd: 'echo hello >> out.txt', escalate: true, justification: 'Append to out.txt' } },
  { text: 'Appending again.', command: { cmd: 'echo hello >> out.txt', escalate: true, justification: 'Append to out.txt' } },
  { text: 'Done.' },
];

const systemOf = (events: StoredEvent[], subtype: string) =>
  events.filter((e): e is StoredEvent<'system'> => e.type === 'system' && (e.data as EventData<'system'>).subtype === subtype);
const ofType = <K extends StoredEvent['type']>(events: StoredEvent[], type: K): Array<StoredEvent<K>> =>
  events.filter((e) => e.type === type) as Array<StoredEvent<K>>;

/**
 * The real Codex CLI under the real sidecar against the real control plane; only the model is a
 * stand-in (`startMockOpenAI`, the Responses API on loopback) that plays a script per
 * conversation: calls of Codex's `exec_command` (escalated or not) and `apply_patch`. Codex runs
 * as `codex app-server` for interactive and autonomous workers alike, with the sandbox the
 * permission lists call for (read-only here: every patch and every escalation is asked).
 */
describe(`the real Codex ${CODEX_VERSION} under svc-sidecar`, () => {
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
    await writeFile(path.join(templatesDir, 'codex-interactive.toml'), codexTemplate());
    // The same in a conversation: Codex's app-server stays up between turns.
    const interactive = await readFile(path.join(templatesDir, 'codex-interactive.toml'), 'utf8');
    await writeFile(path.join(templatesDir, 'codex-talk.toml'), interactive.replace('[sidecar]', '[session]\nmode = "conversation"\n[sidecar]'));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: {
        SVC_TEMPLATES_DIR: templatesDir,
        ...sandboxEnvFor(codexBinary()),
      },
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

  async function run(
    name: string,
    turns: readonly ResponsesTurn[],
    extra: Record<string, unknown>,
    options: {
      mock?: MockOpenAIOptions;
      prepare?: (workspace: string) => Promise<void>;
      command?: string;
      mode?: 'one_shot' | 'conversation';
      prompt?: string;
    } = {},
  ) {
    const mock = await startMockOpenAI(turns, options.mock);
    mocks.push(mock);
    const worker = await stack.createWorker('e2e-user', { mode: options.mode ?? 'one_shot' });
    const workspace = path.join(dir, name);
    const agent = await codexAgent({
      cwd: workspace,
      home: path.join(dir, `${name}-home`),
      baseUrl: mock.url,
      prompt: options.prompt ?? 'Create out.txt containing hello, using the shell.',
    });
    await options.prepare?.(workspace);
    if (options.command) agent.command = options.command;
    const config = {
      adapter: 'codex',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      agent,
      decision_wait_ms: 5000,
      ...extra,
    };
    const sidecar = await startSidecarWith(dir, name, config);
    const events = () => api().events(worker.worker_id);
    return {
      worker,
      workspace,
      exited: sidecar.exited,
      events,
      mock,
      outFile: path.join(workspace, 'out.txt'),
      stderr: sidecar.stderr,
      pid: sidecar.pid,
      /** Starts the sidecar again on the same state directory, as its supervisor in a sandbox does. */
      startAgain: () => startSidecarWith(dir, name, config),
    };
  }

  const openRequests = (workerId: string) => api().openRequests(workerId);
  const decide = (workerId: string, body: Record<string, unknown>) => api().decide(workerId, body);
  /** What the model got back for its tool call (the next request's function_call_output). */
  const toolOutputSeen = (mock: MockOpenAI) => JSON.stringify(mock.requests().at(-1)?.['input'] ?? []);

  it('a command that needs approval: the request shows through the API, a person allows it, the command really runs', async () => {
    const agent = await run('approve', ESCALATED, { autonomous: false });
    const [request] = await waitFor(
      'the open request',
      async () => ((await openRequests(agent.worker.worker_id)).length === 1 ? openRequests(agent.worker.worker_id) : undefined),
      60_000,
      100,
    );
    expect(request!.data).toMatchObject({ tool_name: 'command_execution', description: 'Write out.txt' });
    expect(JSON.stringify(request!.data.input)).toContain('echo hello > out.txt');
    expect((await decide(agent.worker.worker_id, { request_id: request!.data.request_id, decision: 'allow' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    const types = (await agent.events()).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(['control_request', 'control_response', 'tool_use', 'tool_result', 'result', 'progress']));
  }, 90_000);

  it("a conversation: the same Codex thread takes a person's message after its first turn (turn/start), and the model's request holds both", async () => {
    const agent = await run('conversation', ESCALATED, { autonomous: false, conversation: true }, { mode: 'conversation' });
    const workerId = agent.worker.worker_id;
    const results = async () => (await agent.events()).filter((e) => e.type === 'result').length;
    const request = await api().oneOpenRequest(workerId);
    expect((await decide(workerId, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('turn 1 ended', async () => (await results()) === 1, 60_000, 100);
    const text = 'Now tell me what you did.';
    const sent = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    expect(sent.status).toBe(202);
    await waitFor('turn 2 ended', async () => (await results()) === 2, 60_000, 100);
    const last = JSON.stringify(agent.mock.requests().at(-1)!['input']);
    for (const said of ['Create out.txt containing hello, using the shell.', text]) expect(last).toContain(said);
    const events = await agent.events();
    expect(events.filter((e) => e.type === 'system' && (e.data as { subtype?: string }).subtype === 'message_undelivered')).toEqual([]);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    process.kill(agent.pid, 'SIGTERM');
    await agent.exited;
  }, 120_000);

  /** Sends a person's message (expecting 202). */
  const say = async (workerId: string, text: string) => {
    const sent = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    expect(sent.status).toBe(202);
  };
  const activityNow = async (workerId: string) => (await api().get<Worker>(`/v1/workers/${workerId}`)).activity;
  const resultsOf = async (agent: { events(): Promise<StoredEvent[]> }) => ofType(await agent.events(), 'result');
  const inputOf = (mock: MockOpenAI, n: number) => JSON.stringify(mock.requests()[n]?.['input'] ?? []);

  it('interrupted in a running turn (turn/interrupt): an interrupted result within 5 s, idle, and the next message is a turn of the same thread in the same process', async () => {
    const agent = await run(
      'turn-interrupt',
      [{ text: 'Sure.' }],
      { conversation: true },
      {
        mode: 'conversation',
        prompt: 'Count to a million, slowly.',
        mock: { holdOpen: (_body, n) => n === 0 },
      },
    );
    const workerId = agent.worker.worker_id;
    await waitFor('the model streaming turn 1', async () => agent.mock.requests().length === 1 && (await activityNow(workerId)) === 'working', 60_000, 100);
    const asked = Date.now();
    const interrupted = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/interrupt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}` },
    });
    expect(interrupted.status).toBe(202);
    const [result] = await waitFor('the interrupted result', async () => ((await resultsOf(agent)).length === 1 ? resultsOf(agent) : undefined), 5_000, 50);
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(result!.data).toMatchObject({ subtype: 'interrupted' });
    await waitFor('idle', async () => (await activityNow(workerId)) === 'idle', 10_000, 100);
    await say(workerId, 'Just say hi instead.');
    await waitFor('turn 2 ended', async () => (await resultsOf(agent)).length === 2, 60_000, 100);
    expect((await resultsOf(agent))[1]!.data).toMatchObject({ subtype: 'success' });
    for (const said of ['Count to a million, slowly.', 'Just say hi instead.']) expect(inputOf(agent.mock, 1)).toContain(said);
    expect(systemOf(await agent.events(), 'agent_start')).toHaveLength(1);
    process.kill(agent.pid, 'SIGTERM');
    await agent.exited;
  }, 120_000);

  it('a message while a turn runs is steered into it (turn/steer): the model sees it within that turn, one result, and the history has it before', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const agent = await run(
      'steer',
      [{ text: 'Working on it.' }],
      { conversation: true },
      {
        mode: 'conversation',
        prompt: 'Write a haiku.',
        mock: { holdOpen: (_body, n) => (n === 0 ? released : false) },
      },
    );
    const workerId = agent.worker.worker_id;
    await waitFor('the model streaming turn 1', async () => agent.mock.requests().length === 1 && (await activityNow(workerId)) === 'working', 60_000, 100);
    await say(workerId, 'Make it about the sea.');
    await waitFor('the message stored', async () => systemOf(await agent.events(), 'person_message').length === 1, 10_000, 50);
    // Give the sidecar its poll, then let the model finish: Codex asks it again with the steered input.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    release();
    await waitFor('the turn ended', async () => (await resultsOf(agent)).length === 1 && (await activityNow(workerId)) === 'idle', 60_000, 100);
    const seen = agent.mock.requests().map((body) => JSON.stringify(body['input']));
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen[0]).not.toContain('Make it about the sea.');
    expect(seen.at(-1)).toContain('Make it about the sea.');
    const events = await agent.events();
    expect(ofType(events, 'result')).toHaveLength(1);
    expect(BigInt(systemOf(events, 'person_message')[0]!.id)).toBeLessThan(BigInt(ofType(events, 'result')[0]!.id));
    process.kill(agent.pid, 'SIGTERM');
    await agent.exited;
  }, 120_000);

  it('stopped after idle_timeout_s and resumed by a message (thread/resume): the same thread (the model is sent turn 1), the workspace as it was', async () => {
    const agent = await run('resume', ESCALATED, { conversation: true, idle_timeout_s: 2 }, { mode: 'conversation' });
    const workerId = agent.worker.worker_id;
    const request = await api().oneOpenRequest(workerId);
    expect((await decide(workerId, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('suspended', async () => (await activityNow(workerId)) === 'suspended', 60_000, 100);
    expect(systemOf(await agent.events(), 'agent_exit')[0]!.data.details).toMatchObject({ resumable: true, reason: 'idle for 2 s' });
    const before = agent.mock.requests().length;
    await say(workerId, 'What did you do before?');
    await waitFor('the resumed turn ended', async () => (await resultsOf(agent)).length === 2, 60_000, 100).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\n${JSON.stringify(await agent.events(), null, 1).slice(-6000)}\n${agent.stderr().slice(-3000)}`);
    });
    const resumed = inputOf(agent.mock, before);
    for (const said of ['Create out.txt containing hello, using the shell.', 'What did you do before?']) expect(resumed).toContain(said);
    expect(systemOf(await agent.events(), 'agent_start').map((e) => e.data.details?.['resumed'] ?? false)).toEqual([false, true]);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    process.kill(agent.pid, 'SIGTERM');
    await agent.exited;
  }, 120_000);

  /** The text of the last person's message a request of the model's holds (its last user `message` item that is not Codex's own context). */
  const lastPersonText = (body: Record<string, unknown>) =>
    (body['input'] as Array<{ type?: string; role?: string; content?: Array<{ text?: string }> }>)
      .filter((item) => item.type === 'message' && item.role === 'user')
      .map((item) => (item.content ?? []).map((part) => part.text ?? '').join(''))
      .filter((said) => !said.startsWith('<'))
      .at(-1) ?? '';

  /**
   * A conversation's sidecar killed -9 with a person's message just handed on (`when`: right after
   * its poll, or while the model answers it), started again: Codex holds the message once and the
   * model was asked about it once — a message Codex never took is handed over again; one it took
   * (its rollout names it) is not, its turn cut short by the crash as by an interrupt.
   */
  async function killedWithAMessage(name: string, when: 'after the poll' | 'while the model answers') {
    const text = `Say this ONCE (${name}).`;
    const agent = await run(
      name,
      [{ text: 'Sure.' }],
      { conversation: true },
      { mode: 'conversation', prompt: 'Say hello.', mock: { holdOpen: (body) => when === 'while the model answers' && lastPersonText(body) === text } },
    );
    const workerId = agent.worker.worker_id;
    await waitFor('turn 1 ended', async () => (await resultsOf(agent)).length === 1 && (await activityNow(workerId)) === 'idle', 60_000, 100);
    await say(workerId, text);
    const stored = await waitFor('the message stored', async () => systemOf(await agent.events(), 'person_message')[0], 10_000, 20);
    if (when === 'after the poll') {
      const cursorFile = path.join(dir, `${name}-state`, 'control-cursor');
      await waitFor('the message handed on', async () => (await readFile(cursorFile, 'utf8').catch(() => '')).trim() === stored.id, 30_000, 2);
    } else await waitFor('the model asked', async () => agent.mock.requests().some((body) => lastPersonText(body) === text), 30_000, 5);
    process.kill(agent.pid, 'SIGKILL');
    await agent.exited;
    const again = await agent.startAgain();
    // Settled: the message's turn run again and idle, or the message taken before the crash and the conversation suspended.
    await waitFor('settled', async () => ['idle', 'suspended'].includes((await activityNow(workerId)) ?? ''), 60_000, 100).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${again.stderr().slice(-4000)}`);
    });
    const andNow = `And now? (${name})`;
    await say(workerId, andNow);
    await waitFor('the next turn asked', async () => agent.mock.requests().some((body) => lastPersonText(body) === andNow), 60_000, 100).catch(
      async (err: unknown) => {
        const history = (await agent.events()).map((e) => `${e.id} ${e.type} ${JSON.stringify(e.data).slice(0, 300)}`);
        const asked = agent.mock.requests().map((body) => lastPersonText(body));
        throw new Error(`${String(err)}\n${history.join('\n')}\nthe model was asked about: ${JSON.stringify(asked)}\n${again.stderr().slice(-3000)}`);
      },
    );
    // Asked about it once: in the turn it was handed over for (again), or, taken by a Codex killed
    // before it could ask, never on its own but within the next turn (held once, below).
    const asked = agent.mock.requests().filter((body) => lastPersonText(body) === text);
    if (when === 'while the model answers') expect(asked).toHaveLength(1);
    else expect(asked.length).toBeLessThanOrEqual(1);
    const next = JSON.stringify(agent.mock.requests().find((body) => lastPersonText(body) === andNow)!['input']);
    expect(next.split(text).length - 1).toBe(1);
    process.kill(again.pid, 'SIGTERM');
    await again.exited;
  }

  it('exactly once: the sidecar killed -9 right after a poll handed it a message; started again, Codex holds the message once and the model is asked about it once', async () => {
    await killedWithAMessage('codex-once', 'after the poll');
  }, 150_000);

  it('exactly once: the sidecar killed -9 while the model answers the message; started again, it is not handed over again (Codex took it), and the thread goes on with it once', async () => {
    await killedWithAMessage('codex-answering', 'while the model answers');
  }, 150_000);

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
    const history = await api().events(session.worker_id);
    expect(JSON.stringify(history)).not.toContain(MODEL_KEY);
    // Codex's own sandbox nests inside svc's bubblewrap sandbox.
    expect(systemOf(history, 'codex_settings')).toHaveLength(1);
    expect(systemOf(history, 'codex_sandbox_unavailable')).toEqual([]);
  }, 90_000);

  it("a session budget below two turns: the proxy refuses the second model request (the provider's insufficient_quota), Codex stops, the history shows the cap", async () => {
    const session = await api().createSession({
      template: 'codex-interactive',
      prompt: 'Create out.txt containing hello, using the shell.',
      overrides: { budget: { max_tokens: 50 } },
    });
    const request = await api().oneOpenRequest(session.worker_id);
    const before = proxied.requests().length;
    const started = Date.now();
    expect((await decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor(
      'the session ended',
      async () => ['completed', 'failed'].includes((await api().get<{ status: string }>(`/v1/sessions/${session.id}`)).status),
      60_000,
      100,
    ).catch(async (err: unknown) => {
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

  it("deny with a message: the command does not run, the model is told it was rejected, the history shows the attempt and the person's reason", async () => {
    const agent = await run('deny', ESCALATED, { autonomous: false });
    const request = await api().oneOpenRequest(agent.worker.worker_id);
    expect(
      (await decide(agent.worker.worker_id, { request_id: request.data.request_id, decision: 'deny', message: 'Not in this directory, please.' })).status,
    ).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    expect(toolOutputSeen(agent.mock)).toMatch(/rejected/i);
    const history = await agent.events();
    expect(ofType(history, 'control_response')[0]!.data).toMatchObject({ decision: 'deny', message: 'Not in this directory, please.' });
    const use = ofType(history, 'tool_use').find((e) => e.data.name === 'command_execution');
    expect(ofType(history, 'tool_result').find((e) => e.data.tool_use_id === use!.data.tool_use_id)!.data).toMatchObject({ is_error: true });
  }, 90_000);

  it('a patch, allowed: Codex asks (tool file_change, the path in its input), the file is written', async () => {
    const agent = await run('patch-allow', PATCH, { autonomous: false });
    const request = await api().oneOpenRequest(agent.worker.worker_id);
    expect(request.data.tool_name).toBe('file_change');
    expect(request.data.input['changes']).toEqual([expect.objectContaining({ path: path.join(agent.workspace, 'hello.txt') })]);
    expect((await decide(agent.worker.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(path.join(agent.workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    const history = await agent.events();
    expect(systemOf(history, 'codex_settings')[0]!.data.details).toMatchObject({ sandbox: 'read-only', approval_policy: 'on-request' });
    expect(systemOf(history, 'codex_sandbox_unavailable')).toEqual([]);
  }, 90_000);

  it("a patch, denied with a message: no file, the model's next request carries Codex's rejection, the history shows tool_use and an error tool_result", async () => {
    const agent = await run('patch-deny', PATCH, { autonomous: false });
    const request = await api().oneOpenRequest(agent.worker.worker_id);
    expect((await decide(agent.worker.worker_id, { request_id: request.data.request_id, decision: 'deny', message: 'No new files today.' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(path.join(agent.workspace, 'hello.txt'))).toBe(false);
    expect(toolOutputSeen(agent.mock)).toContain('patch rejected by user');
    const history = await agent.events();
    const use = ofType(history, 'tool_use').find((e) => e.data.name === 'file_change')!;
    expect(ofType(history, 'tool_result').find((e) => e.data.tool_use_id === use.data.tool_use_id)!.data).toMatchObject({ is_error: true });
    expect(ofType(history, 'control_response')[0]!.data).toMatchObject({ decision: 'deny', message: 'No new files today.' });
  }, 90_000);

  it('"always": Codex accepts for the session, the same escalation asked again runs without a second request, and the rule is listed by the API', async () => {
    const agent = await run('always', SAME_ESCALATION_TWICE, { autonomous: false });
    const request = await api().oneOpenRequest(agent.worker.worker_id);
    expect((await decide(agent.worker.worker_id, { request_id: request.data.request_id, decision: 'allow', scope: 'always' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\nhello\n');
    const history = await agent.events();
    expect(ofType(history, 'control_request')).toHaveLength(1);
    expect(ofType(history, 'tool_use').filter((e) => e.data.name === 'command_execution')).toHaveLength(2);
    const rules = await api().get<ListResponseOf<PermissionRule>>(`/v1/workers/${agent.worker.worker_id}/permission-rules`);
    expect(rules.items).toEqual([expect.objectContaining({ tool_name: 'command_execution', decision: 'allow' })]);
  }, 90_000);

  it('deny with interrupt: Codex cancels the turn, the result says so, the model is asked nothing more', async () => {
    const agent = await run('interrupt', ESCALATED, { autonomous: false });
    const request = await api().oneOpenRequest(agent.worker.worker_id);
    expect(
      (await decide(agent.worker.worker_id, { request_id: request.data.request_id, decision: 'deny', message: 'Stop here.', interrupt: true })).status,
    ).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    expect(agent.mock.requests()).toHaveLength(1);
    const history = await agent.events();
    expect(ofType(history, 'result').at(-1)!.data).toMatchObject({ subtype: 'interrupted', text: expect.stringContaining('cancelled') });
    expect(ofType(history, 'tool_result').at(-1)!.data).toMatchObject({ is_error: true });
  }, 90_000);

  it('autonomous with a deny list: rm -rf data is refused by the policy each time Codex asks (in its sandbox or out of it), the directory survives, other commands run unasked', async () => {
    const turns: ResponsesTurn[] = [
      { text: 'Removing data.', command: { cmd: 'rm -rf data' } },
      { text: 'Removing data outside the sandbox.', command: { cmd: 'rm -rf data', escalate: true, justification: 'Remove data' } },
      { text: 'Writing out.txt.', command: { cmd: 'echo hello > out.txt', escalate: true, justification: 'Write out.txt' } },
      { text: 'Done.' },
    ];
    const agent = await run(
      'autonomous-deny',
      turns,
      { autonomous: true, permissions: { auto_approve: [], deny: ['command_execution(rm *)'], ask: [] } },
      { prepare: async (workspace) => void (await mkdir(path.join(workspace, 'data', 'keep'), { recursive: true })) },
    );
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(path.join(agent.workspace, 'data', 'keep'))).toBe(true);
    expect(await readFile(agent.outFile, 'utf8')).toBe('hello\n');
    const history = await agent.events();
    // Codex asks about `rm -rf` even inside its sandbox; each time the policy refuses.
    const decisions = ofType(history, 'control_response').map((e) => e.data);
    expect(decisions).toEqual([
      expect.objectContaining({ decision: 'deny', decided_by: 'policy', message: expect.stringContaining('command_execution(rm *)') }),
      expect.objectContaining({ decision: 'deny', decided_by: 'policy', message: expect.stringContaining('command_execution(rm *)') }),
      expect.objectContaining({ decision: 'allow', decided_by: 'policy' }),
    ]);
    expect(await openRequests(agent.worker.worker_id)).toEqual([]);
    // Every attempt is in the history with its outcome, whether or not Codex reported an item.
    const attempts = ofType(history, 'tool_use').map((e) => e.data.input['command']);
    expect(attempts).toEqual(['rm -rf data', 'rm -rf data', 'echo hello > out.txt']);
    const results = ofType(history, 'tool_result').map((e) => e.data.is_error);
    expect(results).toEqual([true, true, false]);
  }, 90_000);

  it("autonomous with a patch: the file is written without a person; the engine's allow is recorded", async () => {
    const agent = await run('autonomous-patch', PATCH, { autonomous: true });
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(path.join(agent.workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    const history = await agent.events();
    expect(ofType(history, 'control_request').map((e) => e.data.tool_name)).toEqual(['file_change']);
    expect(ofType(history, 'control_response').map((e) => e.data)).toEqual([expect.objectContaining({ decision: 'allow', decided_by: 'policy' })]);
  }, 90_000);

  it("a stream that fails upstream (response.failed, then HTTP 500s): warnings, a failed result, the sidecar exits with Codex's code, nothing hangs", async () => {
    const agent = await run('failing', [{ text: 'never seen' }], { autonomous: false }, { mock: { failing: true } });
    const code = await agent.exited;
    const history = await agent.events();
    expect(systemOf(history, 'agent_error').some((e) => e.data.level === 'warn')).toBe(true);
    expect(ofType(history, 'result').at(-1)!.data).toMatchObject({ subtype: 'failed', is_error: true });
    const exit = systemOf(history, 'agent_exit').at(-1)!;
    expect(code).toBe((exit.data.details as { code: number }).code);
  }, 90_000);

  it("a command Codex's read-only sandbox refuses (Codex reports no item for it): the history still shows the attempt, with the error Codex gave the model", async () => {
    const agent = await run('sandbox-refused', [{ text: 'Writing out.txt in the sandbox.', command: { cmd: 'echo hello > out.txt' } }, { text: 'Done.' }], {
      autonomous: false,
    });
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    const history = await agent.events();
    expect(ofType(history, 'tool_use').map((e) => e.data)).toEqual([
      expect.objectContaining({ name: 'command_execution', input: expect.objectContaining({ command: 'echo hello > out.txt' }) }),
    ]);
    expect(ofType(history, 'tool_result').map((e) => e.data)).toEqual([
      expect.objectContaining({ is_error: true, content: expect.stringContaining('Read-only file system') }),
    ]);
  }, 90_000);

  it("where Codex's own sandbox cannot start (no nested namespaces), the run says so in a system event and every patch still goes to the engine", async () => {
    // Codex under a bubblewrap that forbids further user namespaces, as a locked-down Pod might.
    const wrapper = path.join(dir, 'codex-without-namespaces');
    await writeFile(
      wrapper,
      `#!/bin/sh\nexec bwrap --bind / / --proc /proc --dev /dev --unshare-user --disable-userns --die-with-parent -- ${codexBinary()} "$@"\n`,
      { mode: 0o755 },
    );
    const agent = await run('no-nested-sandbox', PATCH, { autonomous: false }, { command: wrapper });
    const request = await api().oneOpenRequest(agent.worker.worker_id);
    expect(request.data.tool_name).toBe('file_change');
    expect((await decide(agent.worker.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(await readFile(path.join(agent.workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    const [unavailable] = systemOf(await agent.events(), 'codex_sandbox_unavailable');
    expect(unavailable!.data).toMatchObject({ level: 'warn', message: expect.stringContaining('namespace') });
  }, 90_000);

  it("a tool on the deny list is refused without a prompt; the history records the policy's decision", async () => {
    const agent = await run('deny-list', ESCALATED, { autonomous: false, permissions: { auto_approve: [], deny: ['command_execution'], ask: [] } });
    expect(await agent.exited, agent.stderr()).toBe(0);
    expect(existsSync(agent.outFile)).toBe(false);
    const decision = (await agent.events()).find((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(decision!.data).toMatchObject({ decision: 'deny', decided_by: 'policy' });
    expect(await openRequests(agent.worker.worker_id)).toEqual([]);
  }, 90_000);
  it('three turns through POST /v1/sessions in a sealed sandbox, via the model proxy: the command approved in turn 1, idle between turns, the model sent the whole thread in turn 3, the history has each message in order', async () => {
    const session = await api().createSession({ template: 'codex-talk', prompt: 'Create out.txt containing hello, using the shell.' });
    const workerId = session.worker_id;
    const results = async () => ofType(await api().events(workerId), 'result');
    const request = await api().oneOpenRequest(workerId);
    expect((await decide(workerId, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    const said = ['Now tell me what you did.', 'And a third turn, please.'];
    for (let turn = 1; turn <= 3; turn++) {
      await waitFor(`idle after turn ${turn}`, async () => (await results()).length === turn && (await activityNow(workerId)) === 'idle', 60_000, 100);
      if (turn <= said.length) await say(workerId, said[turn - 1]!);
    }
    const last = JSON.stringify(proxied.requests().at(-1)!['input']);
    for (const text of ['Create out.txt containing hello, using the shell.', ...said]) expect(last).toContain(text);
    const events = await api().events(workerId);
    expect(systemOf(events, 'person_message').map((e) => e.data.message)).toEqual(said);
    expect(systemOf(events, 'agent_start')).toHaveLength(1);
    expect(await readFile(path.join(stack.sandboxesDir, workerId, 'root/workspace/out.txt'), 'utf8')).toBe('hello\n');
    expect((await api().get<Worker>(`/v1/workers/${workerId}`)).status).toBe('running');
  }, 150_000);

  it('a PNG sent with a message reaches the Responses API as an image input of the same thread, from a sealed sandbox through the worker port', async () => {
    const session = await api().createSession({ template: 'codex-talk', prompt: 'Create out.txt containing hello, using the shell.' });
    const workerId = session.worker_id;
    const results = async () => ofType(await api().events(workerId), 'result');
    const request = await api().oneOpenRequest(workerId);
    expect((await decide(workerId, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('idle after turn 1', async () => (await results()).length === 1 && (await activityNow(workerId)) === 'idle', 60_000, 100);
    const sent = await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'What is in this picture?', images: [{ media_type: 'image/png', data: TINY_PNG_BASE64 }] }),
    });
    expect(sent.status).toBe(202);
    await waitFor('turn 2 ended', async () => (await results()).length === 2, 60_000, 100);
    const withImage = proxied.requests().find((body) => JSON.stringify(body['input']).includes(TINY_PNG_BASE64));
    expect(withImage, 'no model request carried the image').toBeDefined();
    const items = (withImage!['input'] as Array<{ role?: string; content?: Array<Record<string, unknown>> }>).flatMap((item) => item.content ?? []);
    expect(items).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'input_image', image_url: `data:image/png;base64,${TINY_PNG_BASE64}` }),
        expect.objectContaining({ type: 'input_text', text: 'What is in this picture?' }),
      ]),
    );
    const events = await api().events(workerId);
    expect(JSON.stringify(events)).not.toContain(TINY_PNG_BASE64);
    expect(systemOf(events, 'message_undelivered')).toEqual([]);
  }, 150_000);
});
