import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreateWorkerResultType, ListResponseOf, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { standInAgent } from '@svc/test-support/stand-ins';
import { controlClient, startSidecar } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('svc-sidecar under the real control plane (every service its own process)', () => {
  let stack: E2eStack;
  let dir: string;
  let userToken: string;

  beforeAll(async () => {
    stack = await startStack({ ingestReplicas: 1 });
    dir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-sidecar-'));
    userToken = await stack.userToken('e2e-user');
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function configFor(worker: CreateWorkerResultType, agent: Record<string, unknown>, name: string, extra: Record<string, unknown> = {}): Promise<string> {
    const file = path.join(dir, `${name}.json`);
    await writeFile(path.join(dir, `${name}.token`), worker.token);
    const config = {
      adapter: 'generic',
      ...extra,
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token_file: path.join(dir, `${name}.token`),
      agent,
      state_dir: path.join(dir, `${name}-state`),
      decision_wait_ms: 1000,
    };
    await writeFile(file, JSON.stringify(config));
    return file;
  }

  /** Every stored event of the worker, page by page. */
  async function storedEvents(workerId: string): Promise<Array<StoredEvent<'system'>>> {
    const all: Array<StoredEvent<'system'>> = [];
    for (;;) {
      const url = `${stack.gatewayUrl}/v1/workers/${workerId}/sdk-events?limit=1000&after_id=${all.at(-1)?.id ?? '0'}`;
      const page = (await (await fetch(url, { headers: { authorization: `Bearer ${userToken}` } })).json()) as ListResponseOf<StoredEvent<'system'>>;
      all.push(...page.items);
      if (page.items.length < 1000) return all;
    }
  }

  it("generic adapter: start, every stdout and stderr line, and the exit are stored; the sidecar exits with the agent's code", async () => {
    const worker = await stack.createWorker('e2e-user');
    const sidecar = startSidecar(await configFor(worker, { command: 'sh', args: ['-c', 'echo one; echo two >&2; exit 3'] }, 'lifecycle'));
    expect(await sidecar.exited).toBe(3);
    const events = await waitFor('4 events stored', async () => {
      const stored = await storedEvents(worker.worker_id);
      return stored.length === 4 ? stored : undefined;
    });
    expect(events[0]!.data).toMatchObject({ subtype: 'agent_start' });
    expect(
      events
        .slice(1, 3)
        .map((e) => [e.data.message, e.data.stream, e.data.level])
        .sort(),
    ).toEqual([
      ['one', 'stdout', 'info'],
      ['two', 'stderr', 'warn'],
    ]);
    expect(events[3]!.data).toMatchObject({ subtype: 'agent_exit', details: { code: 3, signal: null } });
    expect(new Set(events.map((e) => e.uid)).size).toBe(4);
    expect(sidecar.stderr()).not.toContain(worker.token);
  });

  it('the gateway stopped mid-run: afterwards every event is stored exactly once, in order (the overflow waited on disk)', async () => {
    const worker = await stack.createWorker('e2e-user');
    const lines = 1600;
    const burstGo = path.join(dir, 'outage.go');
    // 50 lines at a pace, a pause until the gateway is down (the test creates the file), then a burst bigger than the sidecar's memory.
    const script = `for i in $(seq 1 50); do echo line-$i; sleep 0.02; done; while [ ! -e "$BURST_GO" ]; do sleep 0.05; done; seq 51 ${lines} | sed 's/^/line-/'`;
    const sidecar = startSidecar(await configFor(worker, { command: 'sh', args: ['-c', script], env: { BURST_GO: burstGo } }, 'outage'));
    await waitFor('the first lines stored', async () => (await storedEvents(worker.worker_id)).length >= 5, 20_000);
    const restart = await stack.stopGateway();
    await writeFile(burstGo, '');
    // Down until the sidecar has failed to deliver and the burst overflows its memory to disk.
    await waitFor(
      'the overflow on disk',
      () => sidecar.stderr().includes('events not delivered') && sidecar.stderr().includes('the next ones wait on disk'),
      20_000,
    );
    await restart();
    expect(await sidecar.exited).toBe(0);
    const events = await waitFor(
      'every line stored',
      async () => {
        const stored = await storedEvents(worker.worker_id);
        return stored.length === lines + 2 ? stored : undefined;
      },
      30_000,
      200,
    );
    expect(events.slice(1, -1).map((e) => e.data.message)).toEqual(Array.from({ length: lines }, (_, i) => `line-${i + 1}`));
    expect(events.map((e) => e.id)).toEqual(Array.from({ length: lines + 2 }, (_, i) => String(i + 1)));
    expect(sidecar.stderr()).toContain('events not delivered');
    expect(sidecar.stderr()).toContain('the next ones wait on disk');
  }, 90_000);

  it('SIGTERM while the control plane is unreachable: the agent stops, the sidecar exits after its grace, the unsent events wait on disk and the next start sends them', async () => {
    const worker = await stack.createWorker('e2e-user');
    const file = await configFor(worker, { command: 'sh', args: ['-c', 'echo one; echo two; sleep 30'] }, 'unreachable', { kill_grace_ms: 500 });
    const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    await writeFile(file, JSON.stringify({ ...config, control_plane_url: 'http://127.0.0.1:9' }));
    const sidecar = startSidecar(file);
    await waitFor('the agent running', () => sidecar.stderr().includes('events not delivered'), 10_000);
    const stopped = Date.now();
    process.kill(sidecar.pid, 'SIGTERM');
    expect(await sidecar.exited).toBe(143);
    expect(Date.now() - stopped).toBeLessThan(3000);
    expect(sidecar.stderr()).toContain('stay in');
    const kept = (await readFile(path.join(dir, 'unreachable-state', 'outbox.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { data: { message: string; subtype?: string } });
    expect(kept.map((e) => e.data.subtype ?? e.data.message)).toEqual(['agent_start', 'one', 'two', 'agent_exit']);

    // The next start (the control plane reachable again) sends them first, once. (Its own run may
    // be refused: the stored agent_exit has ended the worker meanwhile.)
    await writeFile(file, JSON.stringify({ ...config, agent: { command: 'true' } }));
    await startSidecar(file).exited;
    const events = await waitFor('the kept events stored', async () => {
      const stored = await storedEvents(worker.worker_id);
      return stored.length >= 4 ? stored : undefined;
    });
    expect(events.slice(0, 4).map((e) => e.data.subtype ?? e.data.message)).toEqual(['agent_start', 'one', 'two', 'agent_exit']);
    expect(events.slice(0, 4).map((e) => e.uid)).toEqual(kept.map((e) => (e as unknown as { uid: string }).uid));
    expect(new Set(events.map((e) => e.uid)).size).toBe(events.length);
  });

  it('codex for an interactive worker runs app-server: its approval request is decided through the API and answered on its JSON-RPC id (a stand-in replays the real transcript)', async () => {
    const worker = await stack.createWorker('e2e-user');
    const decisionFile = path.join(dir, 'codex-interactive.decisions');
    const agent = {
      command: standInAgent('replay-codex-app-server'),
      env: {
        TRANSCRIPT: path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../sidecar/test/fixtures/codex/appserver-escalate-decline.jsonl'),
        DECISION_FILE: decisionFile,
      },
      prompt: 'Create out.txt containing hello, using the shell.',
    };
    const sidecar = startSidecar(await configFor(worker, agent, 'codex-interactive', { adapter: 'codex', autonomous: false }));
    const requests = async () => controlClient(stack.gatewayUrl, userToken).openRequests(worker.worker_id);
    const [open] = await waitFor('the approval request open', async () => ((await requests()).length === 1 ? requests() : undefined), 20_000);
    expect(open!.data).toMatchObject({ tool_name: 'command_execution', input: { command: 'echo hello | tee out.txt' } });
    const answer = await fetch(`${stack.gatewayUrl}/v1/workers/${worker.worker_id}/control`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: open!.data.request_id, decision: 'deny', message: 'not now' }),
    });
    expect(answer.status).toBe(201);
    expect(await sidecar.exited, sidecar.stderr()).toBe(0);
    expect(
      (await readFile(decisionFile, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown),
    ).toContainEqual({ id: 0, result: { decision: 'decline' } });
    const events = await waitFor('the result stored', async () => {
      const stored = (await storedEvents(worker.worker_id)) as StoredEvent[];
      return stored.some((e) => e.type === 'result') ? stored : undefined;
    });
    expect(events.find((e) => e.type === 'tool_result')!.data).toMatchObject({ is_error: true });
  });

  it('a bad config stops it at once (exit 2) naming the field, never the token', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(
      file,
      JSON.stringify({ adapter: 'generic', worker_id: 'wrk_x', control_plane_url: 'not a url', auth_token: 'svcw_secret_value', agent: { command: 'true' } }),
    );
    const sidecar = startSidecar(file);
    expect(await sidecar.exited).toBe(2);
    expect(sidecar.stderr()).toContain('/control_plane_url');
    expect(sidecar.stderr()).not.toContain('svcw_secret_value');
  });

  describe('decisions (claude-code adapter; a stand-in CLI replays the real transcripts)', () => {
    const REPLAY = standInAgent('replay-claude');
    const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../sidecar/test/fixtures/claude-code');
    const REQUEST_ID = '8644f6b6-e495-48fd-bf4f-f4e4fc33a306';
    const INPUT = { command: 'echo hello > out.txt', description: 'Write hello to out.txt' };

    async function runClaude(name: string, extra: Record<string, unknown>) {
      const worker = await stack.createWorker('e2e-user');
      const decisionFile = path.join(dir, `${name}.decisions`);
      const agent = {
        command: REPLAY,
        env: { TRANSCRIPT: path.join(FIXTURES, 'c-stdio-allow.stdout.jsonl'), DECISION_FILE: decisionFile },
        prompt: 'Create out.txt containing hello',
      };
      const sidecar = startSidecar(await configFor(worker, agent, name, { adapter: 'claude-code', ...extra }));
      const decisions = async () =>
        (await readFile(decisionFile, 'utf8').catch(() => ''))
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line) as Record<string, unknown>);
      return { worker, sidecar, decisions };
    }

    it('a tool that needs approval shows as an open request; a person allows it; the agent gets that decision once, as the CLI expects it', async () => {
      const { worker, sidecar, decisions } = await runClaude('approve', {});
      const requests = async () => controlClient(stack.gatewayUrl, userToken).openRequests(worker.worker_id);
      const [open] = await waitFor('the request open', async () => ((await requests()).length === 1 ? requests() : undefined), 20_000);
      expect(open!.data).toMatchObject({ request_id: REQUEST_ID, tool_name: 'Bash', input: INPUT });
      const updated = { ...INPUT, command: 'echo hello-from-host > out.txt' };
      const answer = await fetch(`${stack.gatewayUrl}/v1/workers/${worker.worker_id}/control`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ request_id: REQUEST_ID, decision: 'allow', updated_input: updated }),
      });
      expect(answer.status).toBe(201);
      expect(await sidecar.exited).toBe(0);
      expect(await decisions()).toEqual([
        { type: 'control_response', response: { subtype: 'success', request_id: REQUEST_ID, response: { behavior: 'allow', updatedInput: updated } } },
      ]);
      const events = await waitFor('the result stored', async () => {
        const stored = await storedEvents(worker.worker_id);
        return stored.some((e) => (e.type as string) === 'result') ? (stored as StoredEvent[]) : undefined;
      });
      const types = events.map((e) => e.type);
      expect(types.indexOf('control_request')).toBeLessThan(types.indexOf('control_response'));
      expect(events.find((e) => e.type === 'control_response')!.data).toMatchObject({ decided_by: 'e2e-user', decision: 'allow' });
      expect(await requests()).toEqual([]);
    });

    it("a tool on the deny list is refused without a prompt; the history records the policy's decision", async () => {
      const { worker, sidecar, decisions } = await runClaude('deny', { permissions: { deny: ['Bash(echo *)'], ask: [], auto_approve: [] } });
      expect(await sidecar.exited).toBe(0);
      const [written] = await decisions();
      expect(written).toMatchObject({ response: { request_id: REQUEST_ID, response: { behavior: 'deny', message: 'denied by the rule Bash(echo *)' } } });
      const events = (await waitFor('the decision stored', async () => {
        const stored = (await storedEvents(worker.worker_id)) as StoredEvent[];
        return stored.some((e) => e.type === 'control_response') ? stored : undefined;
      })) as StoredEvent[];
      expect(events.find((e) => e.type === 'control_response')!.data).toMatchObject({ decision: 'deny', decided_by: 'policy' });
    });

    it('autonomous with auto_approve: no prompt, the tool is allowed with its input unchanged', async () => {
      const { sidecar, decisions } = await runClaude('autonomous', { autonomous: true, permissions: { auto_approve: ['Read'], deny: [], ask: [] } });
      expect(await sidecar.exited).toBe(0);
      expect(await decisions()).toEqual([
        { type: 'control_response', response: { subtype: 'success', request_id: REQUEST_ID, response: { behavior: 'allow', updatedInput: INPUT } } },
      ]);
    });
  });

  it("the sidecar killed and restarted: the old agent is killed, no decision reaches an agent twice, and the new agent's decisions arrive", async () => {
    const worker = await stack.createWorker('e2e-user');
    const receipts = path.join(dir, 'restart.receipts');
    await writeFile(receipts, '');
    const file = await configFor(worker, { command: standInAgent('ask-repeatedly'), prompt: 'go', env: { ASKS: '2', RECEIPTS: receipts } }, 'restart', {
      adapter: 'claude-code',
    });
    const base = `${stack.gatewayUrl}/v1/workers/${worker.worker_id}`;
    const headers = { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' };
    const openIds = async () =>
      ((await (await fetch(`${base}/control/requests?state=open`, { headers })).json()) as ListResponseOf<StoredEvent<'control_request'>>).items.map(
        (r) => r.data.request_id,
      );
    const allow = (requestId: string) =>
      fetch(`${base}/control`, { method: 'POST', headers, body: JSON.stringify({ request_id: requestId, decision: 'allow' }) });
    const delivered = async () =>
      (await readFile(receipts, 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((line) => line.split(' ')[0]!);
    const nextOpen = (seen: string[]) => waitFor('a new open request', async () => (await openIds()).find((id) => !seen.includes(id)), 20_000);

    const first = startSidecar(file);
    const a1 = await nextOpen([]);
    expect((await allow(a1)).status).toBe(201);
    await waitFor('a1 delivered', async () => (await delivered()).includes(a1));
    const a2 = await nextOpen([a1]);
    // The sidecar dies (its agent, in its own process group, lives on); the decision comes meanwhile.
    const agentPid = Number(await readFile(path.join(dir, 'restart-state', 'agent.pgid'), 'utf8'));
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    expect((await allow(a2)).status).toBe(201);

    const second = startSidecar(file);
    await waitFor('the old agent killed', () => !alive(agentPid));
    const b1 = await nextOpen([a1, a2]);
    expect((await allow(b1)).status).toBe(201);
    const b2 = await nextOpen([a1, a2, b1]);
    expect((await allow(b2)).status).toBe(201);
    expect(await second.exited).toBe(0);
    // a2 was for the agent that died with the first sidecar: never written to the new one.
    expect(await delivered()).toEqual([a1, b1, b2]);
    // Its supervisor would have started it again, as the test did; this one finished, so no more.
    expect(existsSync(path.join(dir, 'restart-state', 'started'))).toBe(true);
    expect((await readFile(path.join(dir, 'restart-state', 'finished'), 'utf8')).trim()).toBe('0');
  }, 60_000);
});
