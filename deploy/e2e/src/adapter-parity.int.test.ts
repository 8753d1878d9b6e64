import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { addFilePatch, startMockAnthropic, startMockOpenAI, type MockAnthropic, type MockOpenAI } from '@svc/test-support/stand-ins';
import { claudeAgent, codexAgent, CLAUDE_CODE_VERSIONS } from '@svc/test-support/real-agents';
import { controlClient, startSidecarWith } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';

/** What a story's history looks like, leaving out what differs by CLI (its system notes, its usage reports). */
const shapeOf = (events: StoredEvent[]) => events.map((e) => e.type).filter((type) => type !== 'system' && type !== 'progress');

/**
 * The same story told by both real CLIs under the sidecar: the model wants to write hello.txt, a
 * person is asked and allows it, the file is written, the model says it is done. A viewer must
 * see the same sequence of event types whichever agent ran.
 */
describe('Claude Code and Codex tell the same story in the same shape', () => {
  let stack: E2eStack;
  let dir: string;
  let userToken: string;
  const mocks: Array<MockAnthropic | MockOpenAI> = [];

  beforeAll(async () => {
    stack = await startStack({ ingestReplicas: 1 });
    // Not under /tmp: Codex's sandbox helper refuses a CODEX_HOME there.
    await mkdir(path.join(homedir(), '.cache'), { recursive: true });
    dir = await mkdtemp(path.join(homedir(), '.cache', 'svc-e2e-parity-'));
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), ...mocks.map((mock) => mock.stop())]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Runs one agent through the story: ask → allow → write → result; returns its history. */
  async function story(
    name: string,
    adapter: 'claude-code' | 'codex',
    agentFor: (workspace: string, home: string) => Promise<Record<string, unknown>>,
  ): Promise<StoredEvent[]> {
    const api = controlClient(stack.gatewayUrl, userToken);
    const worker = await stack.createWorker('e2e-user');
    const workspace = path.join(dir, name);
    const home = path.join(dir, `${name}-home`);
    await Promise.all([workspace, home].map((d) => mkdir(d, { recursive: true })));
    const sidecar = await startSidecarWith(dir, name, {
      adapter,
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      agent: await agentFor(workspace, home),
      decision_wait_ms: 5000,
    });
    const request = await api.oneOpenRequest(worker.worker_id);
    expect((await api.decide(worker.worker_id, { request_id: request.data.request_id, decision: 'allow' })).status).toBe(201);
    expect(await sidecar.exited, sidecar.stderr()).toBe(0);
    expect(await readFile(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    return api.events(worker.worker_id);
  }

  it('ask → allow → write → result: the type sequences match', async () => {
    const version = CLAUDE_CODE_VERSIONS.at(-1)!;
    const claude = await story('claude', 'claude-code', async (workspace, home) => {
      const mock = await startMockAnthropic([
        { text: 'I will create hello.txt.', tool: { name: 'Write', input: { file_path: path.join(workspace, 'hello.txt'), content: 'hello\n' } } },
        { text: 'Done.' },
      ]);
      mocks.push(mock);
      return claudeAgent({ version, cwd: workspace, home, baseUrl: mock.url, prompt: 'Create hello.txt containing hello' });
    });
    const codex = await story('codex', 'codex', async (workspace, home) => {
      const mock = await startMockOpenAI([{ text: 'I will create hello.txt.', patch: addFilePatch('hello.txt', ['hello']) }, { text: 'Done.' }]);
      mocks.push(mock);
      return codexAgent({ cwd: workspace, home, baseUrl: mock.url, prompt: 'Create hello.txt containing hello' });
    });
    expect(shapeOf(claude)).toEqual(['assistant', 'tool_use', 'control_request', 'control_response', 'tool_result', 'assistant', 'result']);
    expect(shapeOf(codex)).toEqual(shapeOf(claude));
  }, 120_000);
});
