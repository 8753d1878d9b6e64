import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_REQUEST_ID, MODEL_REQUEST_ID_HEADER } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { createControlPlaneClient } from './http-client.js';
import { startModelProxy, type ModelProxy } from './model-proxy.js';

describe("the sidecar's model proxy (against a real server in the gateway's place)", () => {
  const seen: Array<{ method: string; url: string; requestId: string | undefined }> = [];
  let gateway: http.Server;
  let proxy: ModelProxy;
  beforeAll(async () => {
    gateway = http.createServer((request, response) => {
      seen.push({ method: request.method!, url: request.url!, requestId: request.headers[MODEL_REQUEST_ID_HEADER] as string | undefined });
      if (request.method === 'DELETE') return void response.writeHead(204).end();
      // A model's answer that begins and does not end: the agent gives it up.
      request.resume();
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write('event: message_start\ndata: {}\n\n');
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    const client = createControlPlaneClient(`http://127.0.0.1:${(gateway.address() as AddressInfo).port}`, 'svc_wt_secret');
    proxy = await startModelProxy({ apis: ['anthropic'], workerId: 'wrk_1', client, warn: () => undefined });
  });
  afterAll(async () => {
    await proxy.close();
    gateway.closeAllConnections();
    await new Promise<void>((resolve) => gateway.close(() => resolve()));
  });

  it('names each request with an id of its own (never the agent’s), and says a request its agent gave up given up, by that id', async () => {
    const controller = new AbortController();
    const answer = await fetch(`${proxy.baseUrl('anthropic')}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [MODEL_REQUEST_ID_HEADER]: 'the-agents-own-id' },
      body: '{}',
      signal: controller.signal,
    });
    const reader = answer.body!.getReader();
    await reader.read();
    controller.abort();
    await waitFor('the request said given up', async () => seen.some((request) => request.method === 'DELETE'));
    const [forwarded, givenUp] = seen;
    expect(forwarded).toMatchObject({ method: 'POST', url: '/v1/workers/wrk_1/model/anthropic/v1/messages' });
    expect(forwarded!.requestId).toMatch(MODEL_REQUEST_ID);
    expect(forwarded!.requestId).not.toBe('the-agents-own-id');
    expect(givenUp).toEqual({ method: 'DELETE', url: `/v1/workers/wrk_1/model-requests/${forwarded!.requestId}`, requestId: undefined });
  });
});
