import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { addFilePatch, startMockAnthropic, startMockOpenAI, type MockAnthropic, type MockOpenAI } from '@svc/test-support/stand-ins';
import { claudeAcpBinary, codexAcpBinary, opencodeBinary, sandboxEnvForAll } from '@svc/test-support/real-agents';
import { processesWithEnv } from '../host-processes.js';
import { controlClient } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

const ANTHROPIC_KEY = 'sk-ant-e2e-acp';
const OPENAI_KEY = 'sk-proj-e2e-acp';

/** One ACP agent's built-in template, its stand-in, and what it asks as. */
interface AcpCase {
  template: 'claude-acp' | 'codex-acp' | 'opencode';
  api: 'anthropic' | 'openai';
  /** The tool name and input the write is asked as. */
  asks: { tool_name: string; file_path: string };
  /** The key the upstream saw, from a request's headers. */
  keyOf(headers: Record<string, string | string[] | undefined>): unknown;
  /** Tokens per model answer of the stand-in: input (cached included), output. */
  perAnswer: { input: number; output: number };
}

const CASES: AcpCase[] = [
  {
    template: 'claude-acp',
    api: 'anthropic',
    asks: { tool_name: 'Write', file_path: '/workspace/out.txt' },
    keyOf: (headers) => headers['x-api-key'],
    perAnswer: { input: 100, output: 24 },
  },
  {
    template: 'codex-acp',
    api: 'openai',
    asks: { tool_name: 'edit', file_path: '/workspace/out.txt' },
    keyOf: (headers) => headers['authorization'],
    perAnswer: { input: 1000, output: 50 },
  },
  {
    template: 'opencode',
    api: 'anthropic',
    asks: { tool_name: 'edit', file_path: '/workspace/out.txt' },
    keyOf: (headers) => headers['x-api-key'],
    perAnswer: { input: 100, output: 24 },
  },
];

/**
 * The ACP builds of Claude Code and Codex, and OpenCode over ACP (issue 39's acceptance): each
 * through `POST /v1/sessions` with its built-in template, in a sealed bubblewrap sandbox, its model
 * traffic through the model proxy to a stand-in: a write asked; allowed → the file; denied → none.
 * The stand-in saw the control plane's key, the sandbox held only the placeholder, and the usage
 * the proxy stored is the stand-in's figures.
 */
describe('the ACP agents (claude-agent-acp, codex-acp, OpenCode) under svc through their built-in templates', () => {
  let stack: E2eStack;
  let anthropic: MockAnthropic;
  let openai: MockOpenAI;
  let dir: string;
  let userToken: string;

  beforeAll(async () => {
    anthropic = await startMockAnthropic(
      [
        // Claude Code's Write and OpenCode's write, by the tools the request offers.
        { text: 'I will create out.txt.', tool: { name: 'Write', input: { file_path: '/workspace/out.txt', content: 'hello\n' } } },
        { text: 'Done.' },
        { text: 'A title' },
        { text: 'I will create out.txt.', tool: { name: 'write', input: { filePath: '/workspace/out.txt', content: 'hello\n' } } },
      ],
      {
        turnOf: (body, results) => {
          const tools = Array.isArray(body['tools']) ? (body['tools'] as Array<{ name?: string }>) : [];
          if (tools.length === 0) return 2;
          if (results > 0) return 1;
          return tools.some((tool) => tool.name === 'Write') ? 0 : 3;
        },
      },
    );
    openai = await startMockOpenAI([{ text: 'I will create out.txt.', patch: addFilePatch('out.txt', ['hello']) }, { text: 'Done.' }]);
    dir = await mkdtemp(path.join(tmpdir(), 'svc-real-acp-'));
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: { ...sandboxEnvForAll([claudeAcpBinary(), codexAcpBinary(), opencodeBinary()]) },
      gatewayEnv: {
        SVC_ANTHROPIC_API_KEY: ANTHROPIC_KEY,
        SVC_ANTHROPIC_UPSTREAM_URL: anthropic.url,
        SVC_OPENAI_API_KEY: OPENAI_KEY,
        SVC_OPENAI_UPSTREAM_URL: new URL(openai.url).origin,
      },
    });
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), anthropic?.stop(), openai?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const api = () => controlClient(stack.gatewayUrl, userToken);
  const workspaceFile = (workerId: string) => path.join(stack.sandboxesDir, workerId, 'root/workspace/out.txt');
  const resultOf = (workerId: string) =>
    waitFor('the result', async () => (await api().events(workerId)).find((e): e is StoredEvent<'result'> => e.type === 'result'), 90_000, 100).catch(
      async (err: unknown) => {
        const history = (await api().events(workerId)).map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 400)}`);
        throw new Error(`${String(err)}\n${history.join('\n')}`);
      },
    );

  describe.each(CASES)('$template', (acp) => {
    const stand = () => (acp.api === 'anthropic' ? anthropic : openai);

    it('asks before writing; allowed, the file is written in the sandbox; the key never in the sandbox; the usage stored is the stand-in’s', async () => {
      const before = stand().requests().length;
      const session = await api().createSession({ template: acp.template, prompt: 'Create out.txt containing hello' });
      const request = await api().oneOpenRequest(session.worker_id);
      expect(request.data).toMatchObject({ tool_name: acp.asks.tool_name, input: { file_path: acp.asks.file_path } });
      const sandboxed = processesWithEnv('SVC_SIDECAR_CONFIG=');
      for (const environ of sandboxed) expect(environ).not.toMatch(new RegExp(`${ANTHROPIC_KEY}|${OPENAI_KEY}`));
      expect(sandboxed.some((environ) => environ.includes(PLACEHOLDER_MODEL_KEY))).toBe(true);
      expect((await api().decide(session.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
      expect((await resultOf(session.worker_id)).data).toMatchObject({ subtype: 'success', is_error: false });
      expect(await readFile(workspaceFile(session.worker_id), 'utf8')).toBe('hello\n');

      const seen = stand().requestHeaders().slice(before);
      expect(seen.length).toBeGreaterThanOrEqual(2);
      for (const headers of seen) expect(String(acp.keyOf(headers))).toContain(acp.api === 'anthropic' ? ANTHROPIC_KEY : OPENAI_KEY);
      const worker = await waitFor('the usage written', async () => {
        const view = await api().get<Worker>(`/v1/workers/${session.worker_id}`);
        return view.model_usage?.input_tokens === acp.perAnswer.input * seen.length ? view : undefined;
      });
      expect(worker.model_usage).toMatchObject({ input_tokens: acp.perAnswer.input * seen.length, output_tokens: acp.perAnswer.output * seen.length });
      expect(JSON.stringify(await api().events(session.worker_id))).not.toMatch(new RegExp(`${ANTHROPIC_KEY}|${OPENAI_KEY}`));
    }, 150_000);

    it('denied: no file, and the refusal is in the history', async () => {
      const session = await api().createSession({ template: acp.template, prompt: 'Create out.txt containing hello' });
      const request = await api().oneOpenRequest(session.worker_id);
      expect((await api().decide(session.worker_id, { request_id: request.data.request_id, decision: 'deny', message: 'Not now.' })).status).toBe(201);
      await resultOf(session.worker_id);
      expect(existsSync(workspaceFile(session.worker_id))).toBe(false);
      const toolResult = (await api().events(session.worker_id)).find((e): e is StoredEvent<'tool_result'> => e.type === 'tool_result');
      expect(toolResult?.data).toMatchObject({ is_error: true });
    }, 150_000);
  });
});
