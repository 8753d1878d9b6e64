import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { afterAll, describe, expect, it } from 'vitest';
import type { StreamFrame } from '@svc/protocol';
import { freePort, localSignInCode, localUserToken, waitFor } from '@svc/test-support';

const MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/main.js');

/** Runs what `npm run up` runs (the built launcher), and reads its banner. */
function up(stateDir: string, port: number): { child: ChildProcess; banner: () => string } {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, SVC_STATE_DIR: stateDir, SVC_GATEWAY_PORT: String(port), SVC_GATEWAY_WORKER_PORT: '0', SVC_LOG_LEVEL: 'error' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, banner: () => output };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGINT');
  return exited;
}

describe("the README's first command — the local stack as a newcomer starts it", () => {
  const dirs: string[] = [];
  afterAll(() => Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true }))));

  it('prints the gateway and the demo worker, streams its events, stops on Ctrl+C and keeps them for the next start', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-up-'));
    dirs.push(stateDir);
    const port = await freePort();
    const gateway = `http://127.0.0.1:${port}`;

    const first = up(stateDir, port);
    await waitFor('the banner', () => first.banner().includes('Press Ctrl+C to stop.'), 60_000).catch((err: unknown) => {
      throw new Error(`${String(err)}; the launcher printed:\n${first.banner()}`);
    });
    expect(first.banner()).toContain(`gateway:  ${gateway}`);
    const workerId = /demo worker[^\n]*: (wrk_[A-Za-z0-9_-]+)/.exec(first.banner())![1]!;
    // The console link signs in with the stack's code; only the person at the machine can read it.
    expect(first.banner()).toContain(`console:  ${gateway}/#code=${await localSignInCode(stateDir)}`);
    expect((await fetch(`${gateway}/v1/local/token`, { method: 'POST' })).status).toBe(403);
    const token = await localUserToken(gateway, stateDir);
    const socket = new WebSocket(`${gateway.replace('http', 'ws')}/v1/workers/${workerId}/sdk-events/stream?after_id=0`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const ids: string[] = [];
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as StreamFrame;
      if (frame.kind === 'event') ids.push(frame.event.id);
    });
    await waitFor('3 demo events over the WebSocket', () => ids.length >= 3, 20_000);
    expect(ids.slice(0, 3)).toEqual(['1', '2', '3']);
    socket.close();
    expect(await stop(first.child), first.banner()).toBe(0);

    const second = up(stateDir, port);
    await waitFor('the banner again', () => second.banner().includes('Press Ctrl+C to stop.'), 60_000).catch((err: unknown) => {
      throw new Error(`${String(err)}; the launcher printed:\n${second.banner()}`);
    });
    const again = await localUserToken(gateway, stateDir);
    const listed = (await (await fetch(`${gateway}/v1/workers/${workerId}/sdk-events`, { headers: { authorization: `Bearer ${again}` } })).json()) as {
      total: number;
    };
    expect(listed.total).toBeGreaterThanOrEqual(3);
    expect(await stop(second.child), second.banner()).toBe(0);
  }, 150_000);
});
