import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '@svc/test-support';
import { createControlPlaneClient } from './http-client.js';

/** How long the test server's `/slow` takes to answer: longer than any test waits for it. */
const SLOW_ANSWER_MS = 5_000;

describe('the control-plane client (node:http against a real server)', () => {
  const seen: Array<{ method: string; url: string; authorization: string | undefined; body: string }> = [];
  const traceparents: Array<string | undefined> = [];
  let server: http.Server;
  let base: string;
  beforeAll(async () => {
    server = http.createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        seen.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization, body });
        traceparents.push(request.headers['traceparent'] as string | undefined);
        const reply = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
          response.writeHead(status, { 'content-type': 'application/json', ...headers });
          response.end(JSON.stringify(payload));
        };
        if (request.url!.endsWith('/ok')) reply(202, { accepted: 1 });
        else if (request.url!.endsWith('/busy')) reply(503, { code: 'unavailable', message: 'later' }, { 'retry-after': '2' });
        else if (request.url!.endsWith('/bad')) reply(400, { code: 'invalid_request', message: 'no' });
        else if (request.url!.endsWith('/slow')) setTimeout(() => reply(200, {}), SLOW_ANSWER_MS);
        else reply(404, { code: 'not_found', message: 'none' });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('sends the token and the JSON body, keeps a base path, and parses the answer', async () => {
    const client = createControlPlaneClient(`${base}/prefix/`, 'svc_wt_secret');
    expect(await client.send('POST', '/v1/ok', { events: [1] })).toEqual({ ok: true, status: 202, body: { accepted: 1 } });
    expect(seen.at(-1)).toEqual({ method: 'POST', url: '/prefix/v1/ok', authorization: 'Bearer svc_wt_secret', body: '{"events":[1]}' });
    client.close();
  });

  it('each POST starts a sampled W3C trace (a new trace id each time) that the gateway continues; a GET carries none', async () => {
    const client = createControlPlaneClient(base, 't');
    await client.send('POST', '/v1/ok', { events: [1] });
    await client.send('POST', '/v1/ok', { events: [2] });
    await client.send('GET', '/v1/ok');
    const [first, second, poll] = traceparents.slice(-3);
    expect(first).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(second).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(first!.split('-')[1]).not.toBe(second!.split('-')[1]);
    expect(poll).toBeUndefined();
    client.close();
  });

  it("5xx is retryable with the server's Retry-After; 4xx is not, and names the code", async () => {
    const client = createControlPlaneClient(base, 't');
    expect(await client.send('GET', '/v1/busy')).toEqual({ ok: false, retryable: true, retryAfterMs: 2000, reason: 'GET /v1/busy answered 503 unavailable' });
    expect(await client.send('GET', '/v1/bad')).toEqual({ ok: false, retryable: false, reason: 'GET /v1/bad answered 400 invalid_request' });
    client.close();
  });

  it('a network failure and an aborted request are failures to retry, not exceptions', async () => {
    const nowhere = createControlPlaneClient('http://127.0.0.1:1', 't');
    expect(await nowhere.send('GET', '/v1/ok')).toMatchObject({ ok: false, retryable: true, reason: expect.stringMatching(/^network: /) });
    const client = createControlPlaneClient(base, 't');
    const abort = new AbortController();
    const pending = client.send('GET', '/v1/slow', undefined, abort.signal);
    // Aborted while the server holds it.
    await waitFor('the request at the server', () => seen.some((request) => request.url === '/v1/slow'));
    abort.abort();
    expect(await pending).toMatchObject({ ok: false, retryable: true, reason: expect.stringMatching(/^network: /) });
    client.close();
  });
});
