import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { standInAgent } from '@svc/test-support/stand-ins';
import { controlClient, startSidecarWith } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';

const CHUNKS = 6;
const CHUNK_GAP_MS = 200;

/** An upstream that streams `CHUNKS` SSE events `CHUNK_GAP_MS` apart and notes when it sent each (epoch ms). */
async function startSlowUpstream(): Promise<{ url: string; sentAt: number[][]; stop(): Promise<void> }> {
  const sentAt: number[][] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    const times: number[] = [];
    sentAt.push(times);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const send = () => {
      times.push(Date.now());
      response.write(`event: ping\ndata: {"n":${sent}}\n\n`);
      if (++sent === CHUNKS) return void response.end();
      setTimeout(send, CHUNK_GAP_MS);
    };
    send();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sentAt,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('the model proxy streams, it does not buffer: agent → sidecar → gateway → upstream and back', () => {
  let stack: E2eStack;
  let upstream: Awaited<ReturnType<typeof startSlowUpstream>>;
  let dir: string;

  beforeAll(async () => {
    upstream = await startSlowUpstream();
    stack = await startStack({ ingestReplicas: 1, gatewayEnv: { SVC_ANTHROPIC_API_KEY: 'sk-ant-stream-test', SVC_ANTHROPIC_UPSTREAM_URL: upstream.url } });
    dir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-stream-'));
  }, 120_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), upstream?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A worker whose agent is the stream timer, under the real sidecar: its history, and the timer's lines, once it has exited. */
  async function runStreamTimer(name: string) {
    const worker = await stack.createWorker('e2e-user', { model: { apis: ['anthropic'] } });
    const sidecar = await startSidecarWith(dir, name, {
      adapter: 'generic',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      model_proxy: { apis: ['anthropic'] },
      agent: { command: process.execPath, args: [standInAgent('stream-timer')] },
    });
    expect(await sidecar.exited, sidecar.stderr()).toBe(0);
    const history = await controlClient(stack.gatewayUrl, await stack.userToken('e2e-user')).events(worker.worker_id);
    const lines = history
      .filter((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.message.startsWith('{'))
      .map((e) => JSON.parse(e.data.message) as { event?: number; at?: number; done?: boolean; status?: number });
    return { history, lines };
  }

  it('each chunk reaches the agent within 50 ms of the upstream sending it (chunks 200 ms apart)', async () => {
    const { lines } = await runStreamTimer('stream');
    expect(lines.at(-1)).toEqual({ done: true, status: 200 });
    const receivedAt = lines.filter((line) => line.event !== undefined).map((line) => line.at!);
    const sentAt = upstream.sentAt.at(-1)!;
    expect(receivedAt).toHaveLength(CHUNKS);
    const delays = receivedAt.map((at, index) => at - sentAt[index]!);
    for (const delay of delays) expect(delay, `delays ${delays.join(', ')} ms`).toBeLessThan(50);
    // They arrived spread out as they were sent, not together at the end.
    expect(receivedAt.at(-1)! - receivedAt[0]!).toBeGreaterThan((CHUNKS - 1) * CHUNK_GAP_MS * 0.9);
  }, 30_000);

  it('an upstream that is down: the agent gets a 502 at once, nothing hangs, the worker runs on to its own end; the history says why', async () => {
    await upstream.stop();
    const started = Date.now();
    const { history, lines } = await runStreamTimer('upstream-down');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(lines.at(-1)).toEqual({ done: true, status: 502 });
    expect(history.some((e) => e.type === 'system' && (e.data as { subtype?: string }).subtype === 'model_upstream_failed')).toBe(true);
  }, 30_000);
});
