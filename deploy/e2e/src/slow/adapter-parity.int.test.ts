import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import {
  addFilePatch,
  startMockAnthropic,
  startMockGemini,
  startMockOpenAI,
  type MockAnthropic,
  type MockGemini,
  type MockOpenAI,
} from '@svc/test-support/stand-ins';
import { claudeAcpAgent, claudeAgent, codexAcpAgent, codexAgent, geminiAgent, opencodeAgent, CLAUDE_CODE_VERSIONS } from '@svc/test-support/real-agents';
import { controlClient, startSidecarWith } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

/** What a story's history looks like, leaving out what differs by CLI (its system notes, its usage reports). */
const shapeOf = (events: StoredEvent[]) => events.map((e) => e.type).filter((type) => type !== 'system' && type !== 'progress');

/** One governed agent: its adapter, and its real CLI against a stand-in whose first turn writes hello.txt and whose second says done. */
interface GovernedAgent {
  name: string;
  adapter: 'claude-code' | 'codex' | 'acp';
  /** An agent that ends its turn when a call is refused (the model is not asked again): why. */
  refusalEndsTurn?: string;
  agentFor(workspace: string, home: string, track: (mock: MockAnthropic | MockOpenAI | MockGemini) => void): Promise<Record<string, unknown>>;
}

const PROMPT = 'Create hello.txt containing hello';

const AGENTS: GovernedAgent[] = [
  {
    name: 'claude',
    adapter: 'claude-code',
    async agentFor(workspace, home, track) {
      const mock = await startMockAnthropic([
        { text: 'I will create hello.txt.', tool: { name: 'Write', input: { file_path: path.join(workspace, 'hello.txt'), content: 'hello\n' } } },
        { text: 'Done.' },
      ]);
      track(mock);
      return claudeAgent({ version: CLAUDE_CODE_VERSIONS.at(-1)!, cwd: workspace, home, baseUrl: mock.url, prompt: PROMPT });
    },
  },
  {
    name: 'codex',
    adapter: 'codex',
    async agentFor(workspace, home, track) {
      const mock = await startMockOpenAI([{ text: 'I will create hello.txt.', patch: addFilePatch('hello.txt', ['hello']) }, { text: 'Done.' }]);
      track(mock);
      return codexAgent({ cwd: workspace, home, baseUrl: mock.url, prompt: PROMPT });
    },
  },
  {
    name: 'gemini',
    adapter: 'acp',
    async agentFor(workspace, home, track) {
      const mock = await startMockGemini([
        { text: 'I will create hello.txt.', call: { name: 'write_file', args: { file_path: 'hello.txt', content: 'hello\n' } } },
        { text: 'Done.' },
      ]);
      track(mock);
      return geminiAgent({ cwd: workspace, home, baseUrl: mock.url, prompt: PROMPT });
    },
  },
  {
    name: 'claude-acp',
    adapter: 'acp',
    async agentFor(workspace, home, track) {
      const mock = await startMockAnthropic([
        { text: 'I will create hello.txt.', tool: { name: 'Write', input: { file_path: path.join(workspace, 'hello.txt'), content: 'hello\n' } } },
        { text: 'Done.' },
      ]);
      track(mock);
      return claudeAcpAgent({ cwd: workspace, home, baseUrl: mock.url, prompt: PROMPT });
    },
  },
  {
    name: 'codex-acp',
    adapter: 'acp',
    refusalEndsTurn: 'codex-acp offers only "abort" to refuse, which ends the turn',
    async agentFor(workspace, home, track) {
      const mock = await startMockOpenAI([{ text: 'I will create hello.txt.', patch: addFilePatch('hello.txt', ['hello']) }, { text: 'Done.' }]);
      track(mock);
      return codexAcpAgent({ cwd: workspace, home, baseUrl: mock.url, prompt: PROMPT });
    },
  },
  {
    name: 'opencode',
    adapter: 'acp',
    refusalEndsTurn: 'OpenCode ends its turn on a rejected permission',
    async agentFor(workspace, home, track) {
      const mock = await startMockAnthropic(
        [
          { text: 'I will create hello.txt.', tool: { name: 'write', input: { filePath: path.join(workspace, 'hello.txt'), content: 'hello\n' } } },
          { text: 'Done.' },
          { text: 'Hello file' },
        ],
        // Its title request (no tools) gets a title.
        { turnOf: (body) => (Array.isArray(body['tools']) && body['tools'].length > 0 ? undefined : 2) },
      );
      track(mock);
      return opencodeAgent({ cwd: workspace, home, baseUrl: mock.url, prompt: PROMPT });
    },
  },
];

/**
 * The same story told by every governed agent's real CLI under the sidecar (Claude Code, Codex,
 * and the ACP agents): the model wants to write hello.txt, a person is asked and allows it (the
 * file is written) or denies it (no file), the model says it is done. A viewer must see the same
 * sequence of event types whichever agent ran.
 */
describe('every governed agent tells the same story in the same shape', () => {
  let stack: E2eStack;
  let dir: string;
  let userToken: string;
  const mocks: Array<MockAnthropic | MockOpenAI | MockGemini> = [];

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

  /** Runs one agent through the story, a person deciding; returns its history. */
  async function story(agent: GovernedAgent, decision: 'allow' | 'deny'): Promise<StoredEvent[]> {
    const api = controlClient(stack.gatewayUrl, userToken);
    const worker = await stack.createWorker('e2e-user');
    const name = `${agent.name}-${decision}`;
    const workspace = path.join(dir, name);
    const home = path.join(dir, `${name}-home`);
    await Promise.all([workspace, home].map((d) => mkdir(d, { recursive: true })));
    const sidecar = await startSidecarWith(dir, name, {
      adapter: agent.adapter,
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      agent: await agent.agentFor(workspace, home, (mock) => mocks.push(mock)),
      decision_wait_ms: 5000,
      // An agent that does not exit when its input closes is stopped this long after its turn.
      kill_grace_ms: 2000,
    });
    const request = await api.oneOpenRequest(worker.worker_id);
    expect(
      (await api.decide(worker.worker_id, { request_id: request.data.request_id, decision, ...(decision === 'deny' ? { message: 'Not now.' } : {}) })).status,
    ).toBe(201);
    expect(await sidecar.exited, sidecar.stderr()).toBe(0);
    if (decision === 'allow') expect(await readFile(path.join(workspace, 'hello.txt'), 'utf8')).toBe('hello\n');
    else expect(existsSync(path.join(workspace, 'hello.txt'))).toBe(false);
    return api.events(worker.worker_id);
  }

  for (const decision of ['allow', 'deny'] as const)
    it(`ask → ${decision} → ${decision === 'allow' ? 'write' : 'no file'} → result: the type sequences of ${AGENTS.map((a) => a.name).join(', ')} match`, async () => {
      const shapes: Record<string, string[]> = {};
      for (const agent of AGENTS) shapes[agent.name] = shapeOf(await story(agent, decision));
      const told = ['assistant', 'tool_use', 'control_request', 'control_response', 'tool_result'];
      // After a refusal, an agent whose turn it ends says nothing more (refusalEndsTurn says why).
      const expected = (agent: GovernedAgent) => (decision === 'deny' && agent.refusalEndsTurn ? [...told, 'result'] : [...told, 'assistant', 'result']);
      expect(shapes).toEqual(Object.fromEntries(AGENTS.map((agent) => [agent.name, expected(agent)])));
    }, 240_000);
});
