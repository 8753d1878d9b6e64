import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityOf, type EventData, type ListResponseOf, type PermissionRule, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { standInAgent } from '@svc/test-support/stand-ins';
import { controlClient, startSidecarWith, type SidecarProcess } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';

const subtypeOf = (event: StoredEvent) => (event.type === 'system' ? (event.data as EventData<'system'>).subtype : undefined);

/**
 * The sidecar's `acp` adapter under the real control plane, driving a scripted ACP agent (the
 * protocol's own library on the agent's side, `libs/test-support/agents/acp-agent.mjs`): the
 * handshake, updates as events, permission requests decided by people and rules, writes through
 * the client's file system, messages as prompts, interrupts as `session/cancel`, and a stopped
 * conversation loaded again (`session/load`).
 */
describe('the acp adapter: a scripted ACP agent under svc-sidecar and the real control plane', () => {
  let stack: E2eStack;
  let dir: string;
  let userToken: string;
  const sidecars: SidecarProcess[] = [];

  beforeAll(async () => {
    stack = await startStack({ ingestReplicas: 1 });
    dir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-acp-'));
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    for (const sidecar of sidecars) {
      try {
        process.kill(sidecar.pid, 'SIGKILL');
      } catch {
        // Ended already.
      }
    }
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, userToken);
  const post = (url: string, body?: unknown) => api().post(url, body);
  const results = async (workerId: string) => (await api().events(workerId)).filter((e): e is StoredEvent<'result'> => e.type === 'result');
  const resultNumber = (workerId: string, count: number) =>
    waitFor(`result ${count}`, async () => ((await results(workerId)).length >= count ? (await results(workerId))[count - 1] : undefined), 30_000, 50).catch(
      async (err: unknown) => {
        const history = (await api().events(workerId)).map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 300)}`);
        throw new Error(`${String(err)}\n${history.join('\n')}`);
      },
    );
  const activityNow = async (workerId: string) => (await api().get<Worker>(`/v1/workers/${workerId}`)).activity;

  /** A worker whose sidecar runs the ACP stand-in in `<dir>/<name>` (a conversation unless told). */
  async function acpWorker(name: string, options: { prompt?: string; conversation?: boolean; idleTimeoutS?: number; autoApprove?: string[] } = {}) {
    const worker = await stack.createWorker('e2e-user', { mode: options.conversation === false ? 'one_shot' : 'conversation' });
    const workspace = path.join(dir, name);
    await mkdir(workspace, { recursive: true });
    const config = {
      adapter: 'acp',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      conversation: options.conversation ?? true,
      ...(options.idleTimeoutS ? { idle_timeout_s: options.idleTimeoutS } : {}),
      permissions: { auto_approve: options.autoApprove ?? [], deny: [], ask: [] },
      agent: {
        command: process.execPath,
        args: [standInAgent('acp-agent')],
        cwd: workspace,
        env: { ACP_STATE_DIR: path.join(dir, `${name}-acp`) },
        ...(options.prompt === undefined ? {} : { prompt: options.prompt }),
      },
      decision_wait_ms: 1000,
    };
    const sidecar = await startSidecarWith(dir, name, config);
    sidecars.push(sidecar);
    return { worker, workspace, sidecar, config };
  }

  it('ask → allow → the file is written through the client → result; the events are the agent’s updates in order', async () => {
    const { worker, workspace } = await acpWorker('allow', { prompt: 'write out.txt' });
    const request = await api().oneOpenRequest(worker.worker_id);
    expect(request.data).toMatchObject({
      tool_name: 'edit',
      input: { file_path: path.join(workspace, 'out.txt'), content: 'hello\n' },
      description: 'Write out.txt',
    });
    expect((await api().decide(worker.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    const result = await resultNumber(worker.worker_id, 1);
    expect(result.data).toMatchObject({ subtype: 'success', is_error: false, num_turns: 1 });
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('hello\n');

    const events = await api().events(worker.worker_id);
    const init = events.find((e) => subtypeOf(e) === 'init')!;
    expect((init.data as EventData<'system'>).details).toMatchObject({ load_session: true, agent: { name: 'acp-stand-in', version: '1.0.0' } });
    const story = events
      .filter((e) => ['assistant', 'tool_use', 'tool_result', 'control_request', 'control_response', 'result'].includes(e.type) || subtypeOf(e) === 'plan')
      .map((e) => (e.type === 'system' ? 'plan' : e.type));
    expect(story).toEqual(['plan', 'tool_use', 'control_request', 'control_response', 'tool_result', 'assistant', 'result']);
    const toolUse = events.find((e): e is StoredEvent<'tool_use'> => e.type === 'tool_use')!;
    const toolResult = events.find((e): e is StoredEvent<'tool_result'> => e.type === 'tool_result')!;
    expect(toolResult.data).toEqual({ tool_use_id: toolUse.data.tool_use_id, content: 'Wrote out.txt', is_error: false });
    expect(events.find((e): e is StoredEvent<'assistant'> => e.type === 'assistant')!.data.text).toBe('I wrote out.txt.');
    await waitFor('idle', async () => (await activityNow(worker.worker_id)) === 'idle', 10_000, 50);
  });

  it('ask → deny → no file, and the agent reports the refusal', async () => {
    const { worker, workspace } = await acpWorker('deny', { prompt: 'write no.txt' });
    const request = await api().oneOpenRequest(worker.worker_id);
    expect((await api().decide(worker.worker_id, { request_id: request.data.request_id, decision: 'deny', message: 'not today' })).status).toBe(201);
    expect((await resultNumber(worker.worker_id, 1)).data).toMatchObject({ subtype: 'success' });
    expect(existsSync(path.join(workspace, 'no.txt'))).toBe(false);
    const events = await api().events(worker.worker_id);
    // Its result is svc's word (Gemini CLI reports nothing more of a refused call; this agent's own report comes after, and is not told twice).
    expect(events.filter((e) => e.type === 'tool_result').map((e) => e.data)).toEqual([
      { tool_use_id: request.data.tool_use_id, is_error: true, content: 'refused by e2e-user: not today' },
    ]);
    expect(events.filter((e): e is StoredEvent<'assistant'> => e.type === 'assistant').map((e) => e.data.text)).toContain('I was not allowed to write no.txt.');
  });

  it('"always": the second identical request of the session is not asked of anyone, and the rule is listed', async () => {
    const { worker, workspace } = await acpWorker('always', { prompt: 'write again.txt' });
    const first = await api().oneOpenRequest(worker.worker_id);
    const decided = await api().decide(worker.worker_id, { request_id: first.data.request_id, decision: 'allow', scope: 'always' });
    expect(decided.status).toBe(201);
    await resultNumber(worker.worker_id, 1);
    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'write again.txt' })).status).toBe(202);
    const second = await resultNumber(worker.worker_id, 2);
    expect(second.data).toMatchObject({ subtype: 'success' });
    const events = await api().events(worker.worker_id);
    const responses = events.filter((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(responses.map((e) => [e.data.decision, e.data.decided_by])).toEqual([
      ['allow', 'e2e-user'],
      ['allow', 'policy'],
    ]);
    expect(await readFile(path.join(workspace, 'again.txt'), 'utf8')).toBe('hello\n');
    const rules = await api().get<ListResponseOf<PermissionRule>>(`/v1/rules?worker_id=${worker.worker_id}`);
    expect(rules.items).toEqual([expect.objectContaining({ tool_name: 'edit', decision: 'allow', added_by: 'e2e-user' })]);
  });

  it('a message is a further prompt; an interrupt cancels the running turn (withdrawing its open request) and the next message is answered', async () => {
    const { worker } = await acpWorker('talk', { prompt: 'hello there' });
    await resultNumber(worker.worker_id, 1);
    await waitFor('idle', async () => (await activityNow(worker.worker_id)) === 'idle', 10_000, 50);
    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'please go slowly' })).status).toBe(202);
    await waitFor(
      'working',
      async () => (await api().events(worker.worker_id)).some((e) => e.type === 'assistant' && e.data.text === 'Thinking it over'),
      10_000,
      50,
    );
    const interruptedAt = Date.now();
    expect((await post(`/v1/workers/${worker.worker_id}/interrupt`)).status).toBe(202);
    const cancelled = await resultNumber(worker.worker_id, 2);
    expect(cancelled.data).toMatchObject({ subtype: 'cancelled', is_error: false });
    expect(Date.now() - interruptedAt).toBeLessThan(5_000);
    await waitFor('idle again', async () => (await activityNow(worker.worker_id)) === 'idle', 10_000, 50);

    // A turn interrupted while it waits for a decision: its request is withdrawn.
    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'write held.txt' })).status).toBe(202);
    const held = await api().oneOpenRequest(worker.worker_id);
    expect((await post(`/v1/workers/${worker.worker_id}/interrupt`)).status).toBe(202);
    expect((await resultNumber(worker.worker_id, 3)).data).toMatchObject({ subtype: 'cancelled' });
    expect(
      (await api().events(worker.worker_id)).some((e) => subtypeOf(e) === 'control_withdrawn' && JSON.stringify(e.data).includes(held.data.request_id)),
    ).toBe(true);
    expect(await api().openRequests(worker.worker_id)).toEqual([]);

    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'and now?' })).status).toBe(202);
    await resultNumber(worker.worker_id, 4);
    const said = (await api().events(worker.worker_id)).filter((e): e is StoredEvent<'assistant'> => e.type === 'assistant').map((e) => e.data.text);
    expect(said.at(-1)).toBe('Heard: and now?. Turns so far: 4.');
  });

  it('idle past its timeout, the agent stops; a message loads its session again (session/load) and the conversation goes on', async () => {
    const { worker } = await acpWorker('resume', { prompt: 'first words', idleTimeoutS: 1 });
    await resultNumber(worker.worker_id, 1);
    await waitFor('suspended', async () => (await activityNow(worker.worker_id)) === 'suspended', 15_000, 100);
    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'second words' })).status).toBe(202);
    await resultNumber(worker.worker_id, 2);
    const events = await api().events(worker.worker_id);
    const inits = events.filter((e) => subtypeOf(e) === 'init').map((e) => (e.data as EventData<'system'>).details);
    expect(inits).toHaveLength(2);
    expect(inits[1]).toMatchObject({ session_id: inits[0]!['session_id'], resumed: true });
    // The replayed conversation is not told again; the agent heard both.
    expect(events.filter((e): e is StoredEvent<'assistant'> => e.type === 'assistant').map((e) => e.data.text)).toEqual([
      'Heard: first words. Turns so far: 1.',
      'Heard: second words. Turns so far: 2.',
    ]);
    expect(events.filter((e) => subtypeOf(e) === 'activity').map((e) => activityOf(e))).toContain('suspended');
  });

  it("commands in the client's terminal: one the agent asked about and was allowed runs unasked again; one it did not ask about is asked, and refused runs nothing", async () => {
    const { worker, workspace } = await acpWorker('terminal', { prompt: 'run echo hi > ran.txt; echo done' });
    const asked = await api().oneOpenRequest(worker.worker_id);
    expect(asked.data).toMatchObject({ tool_name: 'execute', input: { command: 'echo hi > ran.txt; echo done' } });
    expect((await api().decide(worker.worker_id, { request_id: asked.data.request_id, decision: 'allow' })).status).toBe(201);
    await resultNumber(worker.worker_id, 1);
    expect(await readFile(path.join(workspace, 'ran.txt'), 'utf8')).toBe('hi\n');
    const said = async () =>
      (await api().events(worker.worker_id)).filter((e): e is StoredEvent<'assistant'> => e.type === 'assistant').map((e) => e.data.text);
    expect((await said()).at(-1)).toBe('exit 0: done\n');
    // Only the agent's own request was asked: the terminal ran what it allowed.
    expect((await api().events(worker.worker_id)).filter((e) => e.type === 'control_request')).toHaveLength(1);

    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'sneak echo sneaked > sneaked.txt' })).status).toBe(202);
    const sneaked = await api().oneOpenRequest(worker.worker_id);
    expect(sneaked.data).toMatchObject({ tool_name: 'execute', input: { command: 'echo sneaked > sneaked.txt' } });
    expect((await api().decide(worker.worker_id, { request_id: sneaked.data.request_id, decision: 'deny' })).status).toBe(201);
    await resultNumber(worker.worker_id, 2);
    expect(existsSync(path.join(workspace, 'sneaked.txt'))).toBe(false);
    expect((await said()).at(-1)).toContain('The terminal refused: running "echo sneaked > sneaked.txt" was refused by svc\'s permission decision');
  });

  it('a write outside the workspace is refused by the client, whatever the decision', async () => {
    const { worker, workspace } = await acpWorker('outside', { prompt: 'write ../escaped.txt', autoApprove: ['edit'] });
    const result = await resultNumber(worker.worker_id, 1);
    expect(result.data).toMatchObject({ subtype: 'error', is_error: true });
    expect(result.data.text).toContain('is outside the workspace');
    expect(existsSync(path.join(path.dirname(workspace), 'escaped.txt'))).toBe(false);
  });
});
