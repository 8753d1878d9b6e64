import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type ListResponseOf, type PermissionRule, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { GEMINI_STAND_IN_USAGE, startMockGemini, type MockGemini } from '@svc/test-support/stand-ins';
import { geminiBinary, sandboxEnvFor } from '@svc/test-support/real-agents';
import { processesWithEnv } from '../host-processes.js';
import { controlClient } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

const MODEL_KEY = 'AIza-e2e-gemini-key';
/** A prompt with this word gets an answer the stand-in holds open, as a model still streaming. */
const HOLD = 'SLOWLY';
const lastUserText = (body: Record<string, unknown>) => JSON.stringify((body['contents'] as unknown[]).at(-1));

/**
 * The real Gemini CLI over ACP (issue 39's acceptance), through `POST /v1/sessions` with the
 * built-in `gemini` template, in a sealed bubblewrap sandbox, its model traffic through the model
 * proxy to the Gemini stand-in: a write asked and allowed, or denied; "always"; an interrupt
 * (`session/cancel`) and a further message (`session/prompt`) on one session.
 */
describe('the real Gemini CLI over ACP under svc', () => {
  let stack: E2eStack;
  let gemini: MockGemini;
  let dir: string;
  let userToken: string;

  beforeAll(async () => {
    gemini = await startMockGemini(
      [{ text: 'I will write out.txt.', call: { name: 'write_file', args: { file_path: 'out.txt', content: 'hello\n' } } }, { text: 'Done.' }],
      {
        // After a function's result: done. A person's message asks for the write again, or a short answer.
        turnOf: (body) => {
          const last = lastUserText(body);
          return last.includes('functionResponse') || last.includes('short answer') ? 1 : 0;
        },
        holdOpen: (body) => lastUserText(body).includes(HOLD),
      },
    );
    dir = await mkdtemp(path.join(tmpdir(), 'svc-real-gemini-'));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: { ...sandboxEnvFor(geminiBinary()) },
      gatewayEnv: { SVC_GEMINI_API_KEY: MODEL_KEY, SVC_GEMINI_UPSTREAM_URL: gemini.url },
    });
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), gemini?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, userToken);
  const post = (url: string, body?: unknown) => api().post(url, body);
  const workspaceFile = (workerId: string, name: string) => path.join(stack.sandboxesDir, workerId, 'root/workspace', name);
  const results = async (workerId: string) => (await api().events(workerId)).filter((e): e is StoredEvent<'result'> => e.type === 'result');
  const resultNumber = (workerId: string, count: number) =>
    waitFor(`result ${count}`, async () => (await results(workerId))[count - 1], 60_000, 100).catch(async (err: unknown) => {
      const history = (await api().events(workerId)).map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 400)}`);
      throw new Error(`${String(err)}\n${history.join('\n')}`);
    });
  const idle = (workerId: string) => waitFor('idle', async () => (await api().get<Worker>(`/v1/workers/${workerId}`)).activity === 'idle', 60_000, 100);

  it('asks before writing; allowed, the file is written in the sandbox; the stand-in saw the real key, the sandbox never held it; the usage stored is the stand-in’s', async () => {
    const before = gemini.requests().length;
    const session = await api().createSession({ template: 'gemini', prompt: 'Create out.txt containing hello' });
    const request = await api().oneOpenRequest(session.worker_id);
    expect(request.data).toMatchObject({ tool_name: 'edit', input: { file_path: '/workspace/out.txt' } });
    const sandboxed = processesWithEnv('SVC_SIDECAR_CONFIG=');
    expect(sandboxed.length).toBeGreaterThanOrEqual(2);
    for (const environ of sandboxed) expect(environ).not.toContain(MODEL_KEY);
    expect(sandboxed.some((environ) => environ.includes(`GEMINI_API_KEY=${PLACEHOLDER_MODEL_KEY}`))).toBe(true);
    expect((await api().decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    expect((await resultNumber(session.worker_id, 1)).data).toMatchObject({ subtype: 'success', is_error: false });
    expect(await readFile(workspaceFile(session.worker_id, 'out.txt'), 'utf8')).toBe('hello\n');
    await idle(session.worker_id);

    const seen = gemini.requestHeaders().slice(before);
    expect(seen.length).toBe(2);
    for (const headers of seen) expect(headers['x-goog-api-key']).toBe(MODEL_KEY);
    expect(
      gemini
        .seen()
        .filter((line) => line.startsWith('POST'))
        .every((line) => line.includes('/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse')),
    ).toBe(true);
    const worker = await waitFor('the usage written', async () => {
      const view = await api().get<Worker>(`/v1/workers/${session.worker_id}`);
      return view.model_usage?.requests === seen.length ? view : undefined;
    });
    expect(worker.model_usage).toMatchObject({
      input_tokens: GEMINI_STAND_IN_USAGE.promptTokenCount * seen.length,
      output_tokens: (GEMINI_STAND_IN_USAGE.candidatesTokenCount + GEMINI_STAND_IN_USAGE.thoughtsTokenCount) * seen.length,
      cache_read_tokens: GEMINI_STAND_IN_USAGE.cachedContentTokenCount * seen.length,
    });
    const events = await api().events(session.worker_id);
    expect(JSON.stringify(events)).not.toContain(MODEL_KEY);
    expect(events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['assistant', 'tool_use', 'control_request', 'control_response', 'tool_result', 'result']),
    );
  }, 120_000);

  it('denied: no file, and the agent tells the model it was refused', async () => {
    const before = gemini.requests().length;
    const session = await api().createSession({ template: 'gemini', prompt: 'Create out.txt containing hello' });
    const request = await api().oneOpenRequest(session.worker_id);
    expect((await api().decide(session.worker_id, { request_id: request.data.request_id, decision: 'deny', message: 'Not now.' })).status).toBe(201);
    await resultNumber(session.worker_id, 1);
    expect(existsSync(workspaceFile(session.worker_id, 'out.txt'))).toBe(false);
    const toldTheModel = gemini
      .requests()
      .slice(before)
      .find((body) => lastUserText(body).includes('functionResponse'));
    expect(lastUserText(toldTheModel!)).toContain('canceled by the user');
    const toolResult = (await api().events(session.worker_id)).find((e): e is StoredEvent<'tool_result'> => e.type === 'tool_result');
    expect(toolResult?.data).toMatchObject({ is_error: true, content: 'refused by e2e-user: Not now.' });
  }, 120_000);

  it('"always": the second identical write in the session is asked of nobody, and the rule is listed', async () => {
    const session = await api().createSession({ template: 'gemini', prompt: 'Create out.txt containing hello' });
    const first = await api().oneOpenRequest(session.worker_id);
    expect((await api().decide(session.worker_id, { request_id: first.data.request_id, decision: 'allow', scope: 'always' })).status).toBe(201);
    await resultNumber(session.worker_id, 1);
    await idle(session.worker_id);
    expect((await post(`/v1/workers/${session.worker_id}/messages`, { text: 'Write it again, please.' })).status).toBe(202);
    await resultNumber(session.worker_id, 2);
    const responses = (await api().events(session.worker_id)).filter((e): e is StoredEvent<'control_response'> => e.type === 'control_response');
    expect(responses.map((e) => [e.data.decision, e.data.decided_by])).toEqual([
      ['allow', 'e2e-user'],
      ['allow', 'policy'],
    ]);
    const rules = await api().get<ListResponseOf<PermissionRule>>(`/v1/rules?worker_id=${session.worker_id}`);
    expect(rules.items).toEqual([expect.objectContaining({ tool_name: 'edit', decision: 'allow', added_by: 'e2e-user' })]);
  }, 120_000);

  it('interrupt (session/cancel) ends a streaming turn within 5 s; the next message (session/prompt) is answered in the same session', async () => {
    const session = await api().createSession({ template: 'gemini', prompt: `Say hello ${HOLD}` });
    await waitFor('the model asked', async () => gemini.requests().some((body) => lastUserText(body).includes(HOLD)), 60_000, 100);
    await waitFor('streaming', async () => (await api().events(session.worker_id)).some((e) => e.type === 'assistant'), 30_000, 100);
    const at = Date.now();
    expect((await post(`/v1/workers/${session.worker_id}/interrupt`)).status).toBe(202);
    expect((await resultNumber(session.worker_id, 1)).data).toMatchObject({ subtype: 'cancelled' });
    expect(Date.now() - at).toBeLessThan(5_000);
    await idle(session.worker_id);
    const inits = (await api().events(session.worker_id)).filter((e) => e.type === 'system' && e.data.subtype === 'init');
    expect((await post(`/v1/workers/${session.worker_id}/messages`, { text: 'And now, a short answer?' })).status).toBe(202);
    expect((await resultNumber(session.worker_id, 2)).data).toMatchObject({ subtype: 'success' });
    expect(gemini.requests().some((body) => lastUserText(body).includes('And now, a short answer?'))).toBe(true);
    // The same process and session: no second init.
    expect((await api().events(session.worker_id)).filter((e) => e.type === 'system' && e.data.subtype === 'init')).toHaveLength(inits.length);
  }, 120_000);
});
