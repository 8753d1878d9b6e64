import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreateWorkerResultType, ListResponseOf, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startStack, type E2eStack } from './stack.js';

const SIDECAR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../sidecar/dist/main.js');

interface SidecarProcess {
  exited: Promise<number | null>;
  stderr(): string;
}

function startSidecar(configFile: string): SidecarProcess {
  const child = spawn(process.execPath, [SIDECAR], { env: { ...process.env, SVC_SIDECAR_CONFIG: configFile }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))), stderr: () => stderr };
}

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

  async function configFor(worker: CreateWorkerResultType, agent: { command: string; args: string[] }, name: string): Promise<string> {
    const file = path.join(dir, `${name}.json`);
    await writeFile(path.join(dir, `${name}.token`), worker.token);
    const config = {
      adapter: 'generic',
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

  it('generic adapter: start, every stdout and stderr line, and the exit are stored; the sidecar exits with the agent\'s code', async () => {
    const worker = await stack.createWorker('e2e-user');
    const sidecar = startSidecar(await configFor(worker, { command: 'sh', args: ['-c', 'echo one; echo two >&2; exit 3'] }, 'lifecycle'));
    expect(await sidecar.exited).toBe(3);
    const events = await waitFor('4 events stored', async () => {
      const stored = await storedEvents(worker.worker_id);
      return stored.length === 4 ? stored : undefined;
    });
    expect(events[0]!.data).toMatchObject({ subtype: 'agent_start' });
    expect(events.slice(1, 3).map((e) => [e.data.message, e.data.stream, e.data.level]).sort()).toEqual([
      ['one', 'stdout', 'info'],
      ['two', 'stderr', 'warn'],
    ]);
    expect(events[3]!.data).toMatchObject({ subtype: 'agent_exit', details: { code: 3, signal: null } });
    expect(new Set(events.map((e) => e.uid)).size).toBe(4);
    expect(sidecar.stderr()).not.toContain(worker.token);
  });

  it('the gateway stopped for 10 s mid-run: afterwards every event is stored exactly once, in order (the overflow waited on disk)', async () => {
    const worker = await stack.createWorker('e2e-user');
    const lines = 1600;
    // 50 lines at a pace, a pause (the gateway goes down), then a burst bigger than the sidecar's memory.
    const script = `for i in $(seq 1 50); do echo line-$i; sleep 0.02; done; sleep 3; seq 51 ${lines} | sed 's/^/line-/'`;
    const sidecar = startSidecar(await configFor(worker, { command: 'sh', args: ['-c', script] }, 'outage'));
    await waitFor('the first lines stored', async () => (await storedEvents(worker.worker_id)).length >= 5, 20_000);
    const restart = await stack.stopGateway();
    await new Promise((resolve) => setTimeout(resolve, 10_000));
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

  it('a bad config stops it at once (exit 2) naming the field, never the token', async () => {
    const file = path.join(dir, 'bad.json');
    await writeFile(file, JSON.stringify({ adapter: 'generic', worker_id: 'wrk_x', control_plane_url: 'not a url', auth_token: 'svcw_secret_value', agent: { command: 'true' } }));
    const sidecar = startSidecar(file);
    expect(await sidecar.exited).toBe(2);
    expect(sidecar.stderr()).toContain('/control_plane_url');
    expect(sidecar.stderr()).not.toContain('svcw_secret_value');
  });
});
