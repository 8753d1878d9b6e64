import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

describe('gateway middleware — request id, client IP, logging, recovery, CORS', () => {
  let gw: GatewayFixture;
  let token: string;
  beforeAll(async () => {
    gw = await startGatewayFixture();
    token = await gw.userToken('alice');
  });
  afterAll(() => gw?.stop());
  const auth = () => ({ authorization: `Bearer ${token}` });

  it('request id — a sane X-Request-Id is kept and echoed; none gets a generated one', async () => {
    const kept = await gw.app.inject({ url: '/v1/test/whoami', headers: { ...auth(), 'x-request-id': 'trace-123' } });
    expect(kept.headers['x-request-id']).toBe('trace-123');
    expect(kept.json().request_id).toBe('trace-123');
    const generated = await gw.app.inject({ url: '/v1/test/whoami', headers: auth() });
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('request id — an unsafe one is replaced, and error answers carry it too', async () => {
    const replaced = await gw.app.inject({ url: '/v1/test/whoami', headers: { ...auth(), 'x-request-id': 'bad id\twith spaces' } });
    expect(replaced.headers['x-request-id']).not.toBe('bad id\twith spaces');
    const notFound = await gw.app.inject({ url: '/nope', headers: { 'x-request-id': 'trace-404' } });
    expect(notFound.headers['x-request-id']).toBe('trace-404');
  });

  it('client IP — X-Forwarded-For is believed only from a trusted proxy', async () => {
    const viaProxy = await gw.app.inject({ url: '/v1/test/whoami', remoteAddress: '10.0.0.1', headers: { ...auth(), 'x-forwarded-for': '203.0.113.7' } });
    expect(viaProxy.json().ip).toBe('203.0.113.7');
    const spoofed = await gw.app.inject({ url: '/v1/test/whoami', remoteAddress: '198.51.100.9', headers: { ...auth(), 'x-forwarded-for': '203.0.113.7' } });
    expect(spoofed.json().ip).toBe('198.51.100.9');
  });

  it('logging — one line per request with method, route, status, duration, request id and principal; never the token', async () => {
    gw.logs.length = 0;
    await gw.app.inject({ url: '/v1/test/whoami', headers: { ...auth(), 'x-request-id': 'log-check' } });
    const line = gw.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request' && l.request_id === 'log-check');
    expect(line).toMatchObject({ method: 'GET', route: '/v1/test/whoami', status: 200, principal: 'user:alice', request_id: 'log-check' });
    expect(typeof line.duration_ms).toBe('number');
    expect(gw.logs.join('\n')).not.toContain(token);
    expect(gw.logs.join('\n')).not.toContain(token.split('.')[2]);
  });

  it('recovery — a throwing handler answers 500 internal without its details, and the next 100 requests are served', async () => {
    gw.logs.length = 0;
    const failed = await gw.app.inject({ url: '/v1/test/panic', headers: { ...auth(), 'x-request-id': 'panic-1' } });
    expect(failed.statusCode).toBe(500);
    // What the request's own logger writes (here the failure) carries its id as well.
    const failure = gw.logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'request failed');
    expect(failure).toMatchObject({ request_id: 'panic-1', level: 50 });
    expect(failed.headers['content-type']).toMatch(/^application\/json/);
    expect(failed.json()).toEqual({ code: 'internal', message: 'internal error' });
    const next = await Promise.all(Array.from({ length: 100 }, () => gw.app.inject({ url: '/v1/test/whoami', headers: auth() })));
    expect(next.every((r) => r.statusCode === 200)).toBe(true);
  });

  it('CORS — a preflight from an allowed origin is answered; another origin gets no CORS headers', async () => {
    const preflight = await gw.app.inject({
      method: 'OPTIONS',
      url: '/v1/status',
      headers: { origin: 'https://console.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('https://console.example');
    expect(String(preflight.headers['access-control-allow-headers'])).toContain('authorization');
    const simple = await gw.app.inject({ url: '/v1/test/whoami', headers: { ...auth(), origin: 'https://console.example' } });
    expect(simple.headers['access-control-allow-origin']).toBe('https://console.example');
    const foreign = await gw.app.inject({ url: '/v1/test/whoami', headers: { ...auth(), origin: 'https://evil.example' } });
    expect(foreign.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('CORS — a sidecar route (worker token) gets no CORS headers, even from an allowed origin', async () => {
    const token = await gw.createWorker('wrk_cors', 'alice');
    const sidecar = await gw.app.inject({
      url: '/v1/workers/wrk_cors/test-sidecar',
      headers: { authorization: `Bearer ${token}`, origin: 'https://console.example' },
    });
    expect(sidecar.statusCode).toBe(200);
    expect(sidecar.headers['access-control-allow-origin']).toBeUndefined();
    expect(sidecar.headers['vary']).toBeUndefined();
  });
});

describe('gateway errors — every non-2xx answer is an APIError', () => {
  let gw: GatewayFixture;
  let token: string;
  beforeAll(async () => {
    gw = await startGatewayFixture({ bodyLimitBytes: 2048 });
    token = await gw.userToken('alice');
  });
  afterAll(() => gw?.stop());
  const auth = () => ({ authorization: `Bearer ${token}` });

  const expectApiError = (response: { statusCode: number; headers: Record<string, unknown>; json(): unknown }, status: number, code: string) => {
    expect(response.statusCode).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.json()).toMatchObject({ code, message: expect.any(String) });
  };

  it('unknown route → 404 not_found', async () => {
    expectApiError(await gw.app.inject({ url: '/v1/nothing-here' }), 404, 'not_found');
  });

  it('wrong method → 405 method_not_allowed with Allow', async () => {
    const response = await gw.app.inject({ method: 'DELETE', url: '/v1/status', headers: auth() });
    expectApiError(response, 405, 'method_not_allowed');
    expect(response.headers['allow']).toContain('GET');
  });

  it('schema violation → 400 invalid_request naming every failing field', async () => {
    const response = await gw.app.inject({ method: 'POST', url: '/v1/test/items?dry_run=maybe', headers: auth(), payload: { count: -1, extra: true } });
    expectApiError(response, 400, 'invalid_request');
    const fields = (response.json() as { details: Array<{ field: string }> }).details.map((d) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['/body/name', '/body/count', '/body/extra']));
  });

  it('malformed JSON → 400 invalid_request', async () => {
    expectApiError(
      await gw.app.inject({ method: 'POST', url: '/v1/test/items', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"name":' }),
      400,
      'invalid_request',
    );
  });

  it('body too large → 413 payload_too_large', async () => {
    expectApiError(
      await gw.app.inject({ method: 'POST', url: '/v1/test/items', headers: auth(), payload: { name: 'x'.repeat(4096), count: 1 } }),
      413,
      'payload_too_large',
    );
  });

  it('unsupported content type → 415 unsupported_media_type', async () => {
    expectApiError(
      await gw.app.inject({ method: 'POST', url: '/v1/test/items', headers: { ...auth(), 'content-type': 'text/xml' }, payload: '<item/>' }),
      415,
      'unsupported_media_type',
    );
  });

  it('no credentials → 401 unauthorized; wrong scheme → 401', async () => {
    expectApiError(await gw.app.inject({ url: '/v1/status' }), 401, 'unauthorized');
    expectApiError(
      await gw.app.inject({ url: '/v1/status', headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } }),
      401,
      'unauthorized',
    );
    expectApiError(await gw.app.inject({ url: '/v1/status', headers: { authorization: `Token ${token}` } }), 401, 'unauthorized');
  });

  it('a credential not allowed here → 403 forbidden', async () => {
    const workerToken = await gw.createWorker('wrk_forbidden', 'alice');
    expectApiError(await gw.app.inject({ url: '/v1/status', headers: { authorization: `Bearer ${workerToken}` } }), 403, 'forbidden');
  });

  it('a valid request passes every stage', async () => {
    const response = await gw.app.inject({ method: 'POST', url: '/v1/test/items', headers: auth(), payload: { name: 'ok', count: 1 } });
    expect(response.statusCode).toBe(201);
  });
});

describe('gateway rate limits — per principal', () => {
  let gw: GatewayFixture;
  beforeAll(async () => {
    gw = await startGatewayFixture({ rateLimitMax: 3, rateLimitWindowMs: 60_000 });
  });
  afterAll(() => gw?.stop());

  it('the fourth request of a user in the window is 429 with Retry-After and an APIError; another user is not affected', async () => {
    const alice = { authorization: `Bearer ${await gw.userToken('alice')}` };
    const bob = { authorization: `Bearer ${await gw.userToken('bob')}` };
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await gw.app.inject({ url: '/v1/test/whoami', headers: alice })).statusCode);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await gw.app.inject({ url: '/v1/test/whoami', headers: alice });
    expect(limited.json()).toMatchObject({ code: 'rate_limited' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await gw.app.inject({ url: '/v1/test/whoami', headers: bob })).statusCode).toBe(200);
  });

  it('anonymous callers are limited by client IP; probes are never limited', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await gw.app.inject({ url: '/nope', remoteAddress: '192.0.2.50' })).statusCode);
    expect(statuses).toEqual([404, 404, 404, 429]);
    const probes = await Promise.all(Array.from({ length: 10 }, () => gw.app.inject({ url: '/healthz', remoteAddress: '192.0.2.50' })));
    expect(probes.every((p) => p.statusCode === 200)).toBe(true);
  });
});
