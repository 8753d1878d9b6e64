import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createControlPlaneClient, startModelProxy, type ControlPlaneClient, type ModelProxy } from '@svc/sidecar';
import { startStack, type E2eStack } from './stack.js';

const CHUNKS = 6;
const CHUNK_GAP_MS = 200;

/** An upstream that streams `CHUNKS` SSE events `CHUNK_GAP_MS` apart and notes when it sent each. */
async function startSlowUpstream(): Promise<{ url: string; sentAt: number[][]; stop(): Promise<void> }> {
  const sentAt: number[][] = [];
  const server = http.createServer((request, response) => {
    request.resume();
    const times: number[] = [];
    sentAt.push(times);
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    let sent = 0;
    const send = () => {
      times.push(performance.now());
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
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('the model proxy streams, it does not buffer: agent → sidecar → gateway → upstream and back', () => {
  let stack: E2eStack;
  let upstream: Awaited<ReturnType<typeof startSlowUpstream>>;
  let client: ControlPlaneClient;
  let proxy: ModelProxy;

  beforeAll(async () => {
    upstream = await startSlowUpstream();
    stack = await startStack({ ingestReplicas: 1, gatewayEnv: { SVC_ANTHROPIC_API_KEY: 'sk-ant-stream-test', SVC_ANTHROPIC_UPSTREAM_URL: upstream.url } });
    const worker = await stack.createWorker('e2e-user', { model: { apis: ['anthropic'] } });
    client = createControlPlaneClient(stack.gatewayUrl, worker.token);
    proxy = await startModelProxy({ apis: ['anthropic'], workerId: worker.worker_id, client, warn: () => {} });
  }, 120_000);
  afterAll(async () => {
    await proxy?.close();
    client?.close();
    await Promise.all([stack?.stop(), upstream?.stop()]);
  });

  it('each chunk reaches the agent within 50 ms of the upstream sending it (chunks 200 ms apart)', async () => {
    const receivedAt: number[] = [];
    await new Promise<void>((resolve, reject) => {
      const request = http.request(`${proxy.baseUrl('anthropic')}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'placeholder' } }, (response) => {
        expect(response.statusCode).toBe(200);
        response.on('data', (chunk: Buffer) => {
          // One SSE event per upstream write; count the events in case two arrive together.
          for (const _event of chunk.toString().split('\n\n').filter(Boolean)) receivedAt.push(performance.now());
        });
        response.on('end', resolve);
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(JSON.stringify({ model: 'claude-sonnet-4-5', stream: true, messages: [] }));
    });
    const sentAt = upstream.sentAt.at(-1)!;
    expect(receivedAt).toHaveLength(CHUNKS);
    const delays = receivedAt.map((at, index) => at - sentAt[index]!);
    for (const delay of delays) expect(delay).toBeLessThan(50);
    // And they arrived spread out as they were sent, not all at the end.
    expect(receivedAt.at(-1)! - receivedAt[0]!).toBeGreaterThan((CHUNKS - 1) * CHUNK_GAP_MS * 0.9);
  }, 30_000);
});
