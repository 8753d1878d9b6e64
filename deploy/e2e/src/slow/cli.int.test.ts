import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Session, Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { writeOneShotDemo } from '../built-in-templates.js';
import { SVC, svcIn } from '../svc-binary.js';
import { startStack, type E2eStack } from '../stack.js';
import { openTerminal, type Terminal } from '../tmux.js';

const run = promisify(execFile);

describe('svc, the built binary, in a real terminal (tmux) against the stack (every service its own process)', () => {
  let stack: E2eStack;
  let env: Record<string, string>;
  let configDir: string;
  const terminals: Terminal[] = [];

  beforeAll(async () => {
    configDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-cli-'));
    // Tests of a worker that ends by itself run the demo once (the built-in one is a conversation).
    await writeOneShotDemo(configDir);
    stack = await startStack({ ingestReplicas: 1, sessionEnv: { SVC_TEMPLATES_DIR: configDir } });
    env = { SVC_URL: stack.gatewayUrl, SVC_TOKEN: await stack.userToken('e2e-cli'), SVC_CONFIG: path.join(configDir, 'config.json') };
  }, 120_000);
  afterEach(async () => {
    for (const terminal of terminals.splice(0)) await terminal.close();
  });
  afterAll(async () => {
    await stack?.stop();
    if (configDir) await rm(configDir, { recursive: true, force: true });
  });

  const svc = svcIn(() => env);
  const attach = async (name: string, ...args: string[]) => {
    const terminal = await openTerminal({ name, command: [process.execPath, SVC, 'attach', ...args], env });
    terminals.push(terminal);
    return terminal;
  };
  const workerStatus = async (workerId: string) =>
    ((await (await fetch(`${stack.gatewayUrl}/v1/workers/${workerId}`, { headers: { authorization: `Bearer ${env['SVC_TOKEN']}` } })).json()) as Worker).status;
  const count = (screen: string, text: string) => screen.split(text).length - 1;

  it("create a demo session; attach; the prompt; y; the tool's result; ctrl+d detaches and it keeps running; attach again: the history once; ended → read-only", async () => {
    // The demo asks its Write a second time and waits for that answer: detached after the first, it still runs.
    const created = await svc('sessions', 'create', '--template', 'demo-once', '--wait', '--json');
    expect(created.code, created.stderr).toBe(0);
    const session = JSON.parse(created.stdout) as Session;
    expect(session.status).toBe('running');

    const first = await attach('first', session.worker_id);
    await first.waitForText('Allow [Write]? (y/n)', 30_000);
    expect(await first.screen()).toContain('[Glob]');
    await first.keys('y');
    await first.waitForText('✓ File created successfully at: /workspace/hello.txt');
    await first.keys('C-d');
    await first.waitForText(`detached from ${session.worker_id}; it keeps running`);
    // It prints that, then closes its stream and exits: moments later, not at the same instant.
    expect(await waitFor('svc attach exited after detaching', () => first.exited(), 5_000)).toBe(true);
    expect(await workerStatus(session.worker_id)).toBe('running');

    const second = await attach('second', session.worker_id);
    // The demo asks the same Write once more (y allows once): the history so far once, and the new prompt.
    const again = await second.waitForText('Allow [Write]? (y/n)', 30_000);
    expect(count(again, '✓ File created successfully')).toBe(1);
    expect(count(again, '✓ allowed by e2e-cli')).toBe(1);
    await second.keys('y');
    await second.waitForText('✓ The file /workspace/hello.txt has been updated.');
    // The worker ends while watched: the view turns read-only by itself.
    await second.waitForText('[read-only]', 30_000);
    await second.waitForText('✔ turn complete');
    await second.keys('C-d');
    await second.waitForText(`detached from ${session.worker_id} (it has ended)`);

    expect(await workerStatus(session.worker_id)).toBe('completed');
    const third = await attach('third', session.worker_id);
    await third.waitForText('read-only: the worker is completed');
    const ended = await third.waitForText('✔ turn complete');
    expect(ended).toContain('[read-only]');
    expect(count(ended, '✓ File created successfully')).toBe(1);
    await third.keys('q');
    await waitFor('q to quit the attach', () => third.exited());
  }, 120_000);

  it('the gateway restarts under an attached viewer: it says so, reconnects with backoff, resumes after the last id (nothing twice, nothing lost)', async () => {
    const created = JSON.parse((await svc('sessions', 'create', '--template', 'demo', '--wait', '--json')).stdout) as Session;
    const viewer = await attach('reconnect', created.worker_id);
    await viewer.waitForText('Allow [Write]? (y/n)', 30_000);
    const restart = await stack.stopGateway();
    await viewer.waitForText(/reconnecting in \d+ s \(attempt \d+\)/);
    await restart();
    const resumed = await viewer.waitForText(/reconnected; resumed after event #\d+/, 30_000);
    expect(resumed).toContain('Allow [Write]? (y/n)');
    await viewer.keys('y');
    const done = await viewer.waitForText('✓ File created successfully at: /workspace/hello.txt');
    expect(count(done, '[Glob]')).toBe(1);
    // (The demo asks its Write once more after this one: only what came before the result counts.)
    expect(count(done.split('✓ File created successfully')[0]!, '? permission asked for [Write]')).toBe(1);
  }, 90_000);

  it('--read-only replays from the start with no prompt; --raw on an ended worker exits 1 saying so', async () => {
    const created = JSON.parse((await svc('sessions', 'create', '--template', 'demo', '--wait', '--json')).stdout) as Session;
    const viewer = await attach('read-only', created.worker_id, '--read-only');
    const screen = await viewer.waitForText('? permission asked for [Write]', 30_000);
    expect(screen).toContain('[read-only]');
    expect(screen).not.toContain('Allow [Write]?');
    await svc('sessions', 'delete', created.id);
    // (A shell in a running sandbox: workspace-terminal.int.test.ts.)
    const raw = await svc('attach', created.worker_id, '--raw');
    expect(raw).toMatchObject({ code: 1, stderr: expect.stringContaining('(worker_ended)') });
  }, 60_000);

  it('sessions list/get/delete, logs, status and errors, against the real gateway', async () => {
    const created = JSON.parse((await svc('sessions', 'create', '--template', 'demo-once', '--wait', '--json')).stdout) as Session;
    const list = await svc('sessions', 'list', '--status', 'running');
    expect(list.stdout).toContain(created.id);
    expect(JSON.parse((await svc('sessions', 'get', created.id, '--json')).stdout)).toMatchObject({ id: created.id, status: 'running' });
    const status = await svc('status');
    expect(status.stdout).toContain(': ok (');
    expect(status.stdout).toMatch(/session\s+up/);
    const missing = await svc('sessions', 'get', 'ses_nope');
    expect(missing).toMatchObject({ code: 1, stderr: 'error: session ses_nope does not exist (session_not_found)\n' });
    // Let the demo finish (allow its request, always: it asks the same once more), so its logs end and `svc logs` returns.
    const headers = { authorization: `Bearer ${env['SVC_TOKEN']}`, 'content-type': 'application/json' };
    const open = await waitFor(
      "the demo's request",
      async () => {
        const page = (await (await fetch(`${stack.gatewayUrl}/v1/workers/${created.worker_id}/control/requests?state=open`, { headers })).json()) as {
          items: Array<{ data: { request_id: string } }>;
        };
        return page.items[0];
      },
      30_000,
      100,
    );
    await fetch(`${stack.gatewayUrl}/v1/workers/${created.worker_id}/control`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ request_id: open.data.request_id, decision: 'allow', scope: 'always' }),
    });
    const logs = await svc('logs', created.id, '--tail', '50');
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain('svc-sidecar: starting');
    expect(logs.stderr).toBe('-- the sandbox has ended\n');
    const deleted = JSON.parse((await svc('sessions', 'delete', created.id, '--json')).stdout) as Session;
    expect(deleted.status).toBe('completed');
    const refused = await run(process.execPath, [SVC, 'sessions', 'list'], { env: { ...process.env, ...env, SVC_TOKEN: 'not-a-jwt' }, encoding: 'utf8' }).catch(
      (err: { code: number; stderr: string }) => err,
    );
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringMatching(/^error: .* \(unauthorized\)\n$/) as unknown as string });
  }, 60_000);
});
