import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activityOf, type EventData, type StoredEvent, type Worker } from '@svc/protocol';
import { TINY_PNG_BASE64, waitFor } from '@svc/test-support';
import { startMockAnthropic, type MockAnthropic } from '@svc/test-support/stand-ins';
import { claudeAgent, claudeBinary, CLAUDE_CODE_VERSIONS, sandboxEnvFor } from '@svc/test-support/real-agents';
import { controlClient, startSidecarWith } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

const TOOL_INPUT = { command: 'echo hello > out.txt', description: 'Write hello to out.txt' };
/** A conversation opened with this prompt plays a tool-free first turn. */
const THREE_TURNS = 'Say hello first.';
/** How many of the request's messages a person wrote (text, not a tool's result). */
const peopleSaid = (body: Record<string, unknown>) =>
  (body['messages'] as Array<{ role?: string; content?: unknown }>).filter(
    (message) => message.role === 'user' && Array.isArray(message.content) && message.content.some((block: { type?: string }) => block.type === 'text'),
  ).length;
/** A prompt with this word gets an answer the stand-in holds open, as a model still streaming. */
const HOLD = 'SLOWLY';
/** A message with this word gets an answer the stand-in pauses in for `PAUSE_MS`, as a model slow to go on. */
const PAUSE = 'PAUSING';
const PAUSE_MS = 1500;

/** The built-in `claude` template (a conversation), its agent stopped after 3 s idle. */
function claudeTalk(builtIn: string): string {
  const talk = builtIn
    .replace(/^description = .*$/m, 'description = "Claude Code in a conversation, stopped after 3 s idle"')
    .replace('mode = "conversation"', 'mode = "conversation"\nidle_timeout_s = 3');
  if (!talk.includes('idle_timeout_s = 3')) throw new Error('the built-in claude template is no longer a conversation');
  return talk;
}

const subtypeOf = (event: StoredEvent) => (event.type === 'system' ? (event.data as EventData<'system'>).subtype : undefined);
const lastUserText = (body: Record<string, unknown>) => JSON.stringify((body['messages'] as unknown[]).at(-1));

/**
 * The real Claude Code in a conversation under svc (issue 36's acceptance): interrupted in a
 * running turn, a message sent while a turn runs, stopped when idle and resumed on its own
 * conversation, and the sidecar killed while idle and started again. Only the model is a
 * stand-in, reached through the model proxy.
 */
describe.each(CLAUDE_CODE_VERSIONS)('the real Claude Code %s in a conversation', (version) => {
  let stack: E2eStack;
  let mock: MockAnthropic;
  let dir: string;
  let userToken: string;

  beforeAll(async () => {
    mock = await startMockAnthropic([{ text: 'I will create out.txt.', tool: { name: 'Bash', input: TOOL_INPUT } }, { text: 'Done.' }, { text: 'Hello!' }], {
      // A conversation opened with THREE_TURNS: turn 1 says hello (the third step), turn 2 asks for Bash, then done.
      turnOf: (body) => (JSON.stringify(body['messages']).includes(THREE_TURNS) && peopleSaid(body) === 1 ? 2 : undefined),
      // The first request of a conversation whose prompt says so: the interrupt ends it.
      holdOpen: (body) => {
        const messages = body['messages'] as Array<{ role?: string }>;
        return !messages.some((message) => message.role === 'assistant') && JSON.stringify(messages).includes(HOLD);
      },
      pauseMs: (body) => (lastUserText(body).includes(PAUSE) ? PAUSE_MS : undefined),
    });
    dir = await mkdtemp(path.join(tmpdir(), `svc-real-claude-talk-${version}-`));
    const templates = path.join(dir, 'templates');
    await mkdir(templates);
    const builtIn = await readFile(fileURLToPath(new URL('../../../../services/session/templates/claude.toml', import.meta.url)), 'utf8');
    await writeFile(path.join(templates, 'claude-talk.toml'), claudeTalk(builtIn));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: {
        SVC_TEMPLATES_DIR: templates,
        ...sandboxEnvFor(claudeBinary(version)),
      },
      gatewayEnv: { SVC_ANTHROPIC_API_KEY: 'sk-ant-e2e-talk', SVC_ANTHROPIC_UPSTREAM_URL: mock.url },
    });
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), mock?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, userToken);
  const post = async (url: string, body?: unknown) =>
    fetch(`${stack.gatewayUrl}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const activityNow = async (workerId: string) => (await api().get<Worker>(`/v1/workers/${workerId}`)).activity;
  const results = async (workerId: string) => (await api().events(workerId)).filter((e): e is StoredEvent<'result'> => e.type === 'result');
  /** Waits for the worker's `count`th result; on a timeout the error shows its history (and the sidecar's stderr when it is ours). */
  /** Allows every request the worker's agent has open. */
  const allowWhatIsAsked = async (workerId: string) => {
    for (const open of await api().openRequests(workerId)) await api().decide(workerId, { request_id: open.data.request_id, decision: 'allow' });
  };
  /**
   * Waits for the worker's `count`th result, allowing what the agent asks meanwhile (the
   * stand-in plays its script by the tool results it is sent, which a resumed CLI may send
   * differently); on a timeout the error shows the history, the model's last messages and the
   * sidecar's stderr when it is ours.
   */
  const resultNumber = (workerId: string, count: number, stderr?: () => string) =>
    waitFor(
      `result ${count}`,
      async () => {
        await allowWhatIsAsked(workerId);
        return (await results(workerId)).length >= count;
      },
      60_000,
      100,
    ).catch(async (err: unknown) => {
      const history = (await api().events(workerId)).map((e) => `${e.id} ${e.type} ${JSON.stringify(e.data).slice(0, 300)}`);
      const sent = mock.requests().map((body) =>
        lastUserText(body)
          .replace(/<system-reminder>[^]*?<\/system-reminder>/g, '')
          .slice(0, 400),
      );
      throw new Error(`${String(err)}\n${history.join('\n')}\nthe model's last messages:\n${sent.join('\n')}\n${stderr?.().slice(-4000) ?? ''}`);
    });

  /**
   * A worker in a conversation whose sidecar the test starts itself (as a sandbox would, state in
   * `<dir>/<name>-state`; the model through the sidecar's and the gateway's model proxies), past
   * its first turn (a Bash call allowed) and idle.
   */
  async function idleConversation(name: string) {
    const worker = await stack.createWorker('e2e-user', { mode: 'conversation', model: { apis: ['anthropic'] } });
    const workspace = path.join(dir, name);
    const home = path.join(dir, `${name}-home`);
    await Promise.all([workspace, home].map((d) => mkdir(d, { recursive: true })));
    const config = {
      adapter: 'claude-code',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      conversation: true,
      model_proxy: { apis: ['anthropic'] },
      agent: claudeAgent({ version, cwd: workspace, home, baseUrl: mock.url, prompt: 'Create out.txt containing hello' }),
      decision_wait_ms: 5000,
    };
    const first = await startSidecarWith(dir, name, config);
    const request = await api().oneOpenRequest(worker.worker_id);
    expect((await api().decide(worker.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('idle', async () => (await activityNow(worker.worker_id)) === 'idle', 60_000, 100);
    return { worker, config, first, workspace };
  }

  it('the built-in claude template: three turns through POST /v1/sessions — a tool approved in turn 2, idle between turns, the model sent turns 1 and 2 in turn 3, the history has each message in order', async () => {
    const session = await api().createSession({ template: 'claude', prompt: THREE_TURNS });
    const workerId = session.worker_id;
    const idle = (turns: number) =>
      waitFor(`idle after turn ${turns}`, async () => (await results(workerId)).length === turns && (await activityNow(workerId)) === 'idle', 60_000, 100);
    // Turn 1 says hello; turn 2's Bash call is asked, and allowed (resultNumber allows what is asked).
    await resultNumber(workerId, 1);
    await idle(1);
    expect((await api().events(workerId)).filter((e) => e.type === 'control_request')).toHaveLength(0);
    const said = ['Now say something about the second turn.', 'And a third turn, please.'];
    for (const [index, text] of said.entries()) {
      expect((await post(`/v1/workers/${workerId}/messages`, { text })).status).toBe(202);
      await resultNumber(workerId, index + 2);
      await idle(index + 2);
    }
    const last = JSON.stringify(mock.requests().at(-1)!['messages']);
    for (const text of [THREE_TURNS, ...said]) expect(last).toContain(text);
    const events = await api().events(workerId);
    expect(events.filter((e) => subtypeOf(e) === 'person_message').map((e) => (e.data as EventData<'system'>).message)).toEqual(said);
    expect(events.filter((e) => subtypeOf(e) === 'agent_start')).toHaveLength(1);
    // The approval was turn 2's: after the first message, before the second.
    const [approval] = events.filter((e) => e.type === 'control_response');
    const messageIds = events.filter((e) => subtypeOf(e) === 'person_message').map((e) => BigInt(e.id));
    expect(BigInt(approval!.id) > messageIds[0]! && BigInt(approval!.id) < messageIds[1]!).toBe(true);
    expect((await api().get<Worker>(`/v1/workers/${workerId}`)).status).toBe('running');
  }, 150_000);

  it('a PNG sent with a message reaches the model as an image block, with the text, through the worker port and the model proxy', async () => {
    const session = await api().createSession({ template: 'claude', prompt: THREE_TURNS });
    const workerId = session.worker_id;
    await resultNumber(workerId, 1);
    await waitFor('idle', async () => (await activityNow(workerId)) === 'idle', 60_000, 100);
    const sent = await post(`/v1/workers/${workerId}/messages`, {
      text: 'What is in this picture?',
      images: [{ media_type: 'image/png', data: TINY_PNG_BASE64 }],
    });
    expect(sent.status).toBe(202);
    await resultNumber(workerId, 2);
    const withImage = mock.requests().find((body) => JSON.stringify(body['messages']).includes(TINY_PNG_BASE64));
    expect(withImage, 'no model request carried the image').toBeDefined();
    const message = (withImage!['messages'] as Array<{ role: string; content: unknown }>).find((m) => JSON.stringify(m.content).includes(TINY_PNG_BASE64))!;
    expect(message.role).toBe('user');
    expect(message.content).toEqual(
      expect.arrayContaining([
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: TINY_PNG_BASE64 } },
        // 2.1.330 ends the text with a newline and adds a block naming where it saved the image.
        expect.objectContaining({ type: 'text', text: expect.stringContaining('What is in this picture?') }),
      ]),
    );
    // The history names the image; it never holds its bytes.
    const events = await api().events(workerId);
    expect(JSON.stringify(events)).not.toContain(TINY_PNG_BASE64);
    expect(events.filter((e) => subtypeOf(e) === 'message_undelivered')).toEqual([]);
  }, 150_000);

  it('interrupted in a running turn: an interrupted result within 5 s, the message sent during the turn runs next in the same process, and the history is in the order the model saw', async () => {
    const session = await api().createSession({ template: 'claude-talk', prompt: `Count to a million, ${HOLD}.` });
    const workerId = session.worker_id;
    const before = mock.requests().length;
    await waitFor('the model streaming turn 1', async () => mock.requests().length > before && (await activityNow(workerId)) === 'working', 60_000, 100).catch(
      async (err: unknown) => {
        throw new Error(`${String(err)}: ${mock.requests().length - before} requests, activity ${await activityNow(workerId)}`);
      },
    );
    expect((await post(`/v1/workers/${workerId}/messages`, { text: 'Then create out.txt.' })).status).toBe(202);
    const asked = Date.now();
    expect((await post(`/v1/workers/${workerId}/interrupt`)).status).toBe(202);
    const interrupted = await waitFor('the interrupted result', async () => (await results(workerId))[0], 5_000, 50);
    expect(Date.now() - asked).toBeLessThan(5_000);
    expect(interrupted.data).toMatchObject({ is_error: true, subtype: 'error_during_execution' });
    // The message queued behind the turn runs next, as a turn of its own.
    await resultNumber(workerId, 2);
    await waitFor('idle', async () => (await activityNow(workerId)) === 'idle', 10_000, 100);
    const events = await api().events(workerId);
    expect(events.filter((e) => subtypeOf(e) === 'agent_start')).toHaveLength(1);
    const order = events
      .filter((e) => ['person_message', 'person_interrupt'].includes(subtypeOf(e) ?? '') || e.type === 'result')
      .map((e) => subtypeOf(e) ?? (e as StoredEvent<'result'>).data.subtype);
    expect(order).toEqual(['person_message', 'person_interrupt', 'error_during_execution', 'success']);
    // The model saw the message after the interrupted turn, in the same conversation.
    const seen = mock
      .requests()
      .slice(before)
      .map((body) => JSON.stringify(body['messages']));
    expect(seen.findIndex((messages) => messages.includes('Then create out.txt.'))).toBeGreaterThan(0);
    expect(seen.at(-1)).toContain(`Count to a million, ${HOLD}.`);
    expect((await api().get<Worker>(`/v1/workers/${workerId}`)).status).toBe('running');
  }, 150_000);

  it('stopped after idle_timeout_s and resumed by a message: the same conversation (the model is sent turn 1), the workspace as it was', async () => {
    const session = await api().createSession({ template: 'claude-talk', prompt: 'Create out.txt containing hello' });
    const workerId = session.worker_id;
    const request = await api().oneOpenRequest(workerId);
    expect((await api().decide(workerId, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('suspended', async () => (await activityNow(workerId)) === 'suspended', 60_000, 100);
    const exit = (await api().events(workerId)).find((e) => subtypeOf(e) === 'agent_exit')!;
    expect(exit.data).toMatchObject({ details: { resumable: true, reason: 'idle for 3 s' } });
    expect((await api().get<Worker>(`/v1/workers/${workerId}`)).status).toBe('running');

    const before = mock.requests().length;
    expect((await post(`/v1/workers/${workerId}/messages`, { text: 'What did you do before?' })).status).toBe(202);
    await resultNumber(workerId, 2);
    const resumedRequest = JSON.stringify(mock.requests().slice(before)[0]!['messages']);
    for (const said of ['Create out.txt containing hello', 'What did you do before?']) expect(resumedRequest).toContain(said);
    const events = await api().events(workerId);
    expect(events.filter((e) => subtypeOf(e) === 'agent_start').map((e) => (e.data as EventData<'system'>).details?.['resumed'] ?? false)).toEqual([
      false,
      true,
    ]);
    expect(events.map((e) => activityOf(e)).filter(Boolean)).toEqual(['working', 'waiting_for_decision', 'working', 'idle', 'suspended', 'working', 'idle']);
    expect(await readFile(path.join(stack.sandboxesDir, workerId, 'root/workspace/out.txt'), 'utf8')).toBe('hello\n');
  }, 150_000);

  /** How many of the stand-in's requests the person's `text` was the last message of. */
  const askedAbout = (text: string) => mock.requests().filter((body) => lastUserText(body).includes(text)).length;
  /** The person's message stored, once its 202 came. */
  const storedMessage = async (workerId: string, messageId: string) =>
    waitFor('the message stored', async () =>
      (await api().events(workerId)).find((e) => subtypeOf(e) === 'person_message' && (e.data as EventData<'system'>).details?.['message_id'] === messageId),
    );
  /**
   * After the restart the conversation goes on: the model asked about `text` once in all, and the
   * next turn's request carries it once (the conversation holds it once).
   */
  async function heldOnce(workerId: string, text: string, again: Awaited<ReturnType<typeof startSidecarWith>>) {
    await waitFor(
      'the model asked about the message',
      async () => {
        await allowWhatIsAsked(workerId);
        return askedAbout(text) >= 1 && (await results(workerId)).length >= 2;
      },
      60_000,
      100,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\n${again.stderr().slice(-4000)}`);
    });
    const andNow = `And now? (after ${workerId})`;
    expect((await post(`/v1/workers/${workerId}/messages`, { text: andNow })).status).toBe(202);
    // (A resumed 2.1.197 may be played the script's tool step again: what it asks is allowed.)
    await waitFor(
      'the next turn asked',
      async () => {
        await allowWhatIsAsked(workerId);
        return askedAbout(andNow) > 0;
      },
      60_000,
      100,
    );
    // (When not: how the asks differ, for the failure's message.)
    const [first, second] = mock.requests().filter((body) => lastUserText(body).includes(text));
    const differing = second ? Object.keys({ ...first, ...second }).filter((k) => JSON.stringify(first![k]) !== JSON.stringify(second[k])) : [];
    const shown = differing.map((k) => `${k}: ${JSON.stringify(first![k])?.slice(0, 400)} | ${JSON.stringify(second![k])?.slice(0, 400)}`);
    expect(askedAbout(text), `asked again, differing in ${shown.join('\n')}`).toBe(1);
    const next = JSON.stringify(mock.requests().find((body) => lastUserText(body).includes(andNow))!['messages']);
    expect(next.split(text).length - 1).toBe(1);
  }

  it('exactly once: the sidecar killed -9 right after a poll handed it a message; started again, the conversation holds it once, and the model is asked about it once', async () => {
    const { worker, config, first } = await idleConversation('once');

    const text = 'Say this ONCE, please.';
    const sent = await post(`/v1/workers/${worker.worker_id}/messages`, { text });
    expect(sent.status).toBe(202);
    const { message_id: messageId } = (await sent.json()) as { message_id: string };
    const stored = await storedMessage(worker.worker_id, messageId);
    // The moment its poll has handed it on (the cursor saved), the sidecar is killed.
    const cursorFile = path.join(dir, 'once-state', 'control-cursor');
    await waitFor('the message handed on', async () => (await readFile(cursorFile, 'utf8').catch(() => '')).trim() === stored.id, 30_000, 2);
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    // Started again, it hands the message over again only where the agent never took it, or took
    // it and was killed before it recorded the model's answer (its transcript is then cut); the
    // agent's request asked again is answered with the answer the gateway kept of the first.
    const again = await startSidecarWith(dir, 'once', config);
    await heldOnce(worker.worker_id, text, again);
    process.kill(again.pid, 'SIGTERM');
    await again.exited;
  }, 150_000);

  it('exactly once: the sidecar killed -9 while the model answers the message; started again, the agent asks again and gets the answer the gateway kept — the model asked once', async () => {
    const { worker, config, first } = await idleConversation('asking');
    const text = `Say this once, ${PAUSE}.`;
    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text })).status).toBe(202);
    // The model has the request and is in the middle of its answer: the sidecar is killed (and its agent with it).
    await waitFor('the model asked', async () => askedAbout(text) === 1, 30_000, 5);
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    const again = await startSidecarWith(dir, 'asking', config);
    await heldOnce(worker.worker_id, text, again);
    const history = await api().events(worker.worker_id);
    expect(history.filter((e) => subtypeOf(e) === 'model_answer_replayed')).toHaveLength(1);
    // The turn's answer (the script's "Done.", as turn 1's last) is in the history, from the resumed agent.
    expect(history.filter((e) => e.type === 'assistant' && JSON.stringify(e.data).includes('Done.')).length).toBeGreaterThanOrEqual(2);
    process.kill(again.pid, 'SIGTERM');
    await again.exited;
  }, 150_000);

  it('the sidecar killed -9 while idle and started again: it starts suspended, and a message resumes the same conversation', async () => {
    const { worker, config, first, workspace } = await idleConversation('killed');
    process.kill(first.pid, 'SIGKILL');
    await first.exited;

    const again = await startSidecarWith(dir, 'killed', config);
    await waitFor('suspended', async () => (await activityNow(worker.worker_id)) === 'suspended', 30_000, 100);
    const before = mock.requests().length;
    expect((await post(`/v1/workers/${worker.worker_id}/messages`, { text: 'Still with me?' })).status).toBe(202);
    await resultNumber(worker.worker_id, 2, again.stderr);
    const resumedRequest = JSON.stringify(mock.requests().slice(before)[0]!['messages']);
    for (const said of ['Create out.txt containing hello', 'Still with me?']) expect(resumedRequest).toContain(said);
    expect(await readFile(path.join(workspace, 'out.txt'), 'utf8')).toBe('hello\n');
    process.kill(again.pid, 'SIGTERM');
    await again.exited;
  }, 150_000);
});
