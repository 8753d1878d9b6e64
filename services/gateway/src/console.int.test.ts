import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type CreateWorkerResultType, type StreamFrame } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';
import { consoleCsp } from './routes/console.js';

const PROVIDER = 'https://id.example.com/realms/svc';

describe('the web console, served by the gateway', () => {
  let dir: string;
  let gw: GatewayFixture;
  beforeAll(async () => {
    // A console build as Vite leaves it: index.html and hashed assets.
    dir = await mkdtemp(path.join(tmpdir(), 'svc-console-'));
    await mkdir(path.join(dir, 'assets'));
    await writeFile(path.join(dir, 'index.html'), '<!doctype html><title>svc console</title><script type="module" src="/assets/index-abc123.js"></script>');
    await writeFile(path.join(dir, 'assets', 'index-abc123.js'), 'console.log("console")');
    // The console signs people in at a provider too: it is told where, and may call it.
    gw = await startGatewayFixture({ consoleDir: dir, oidcIssuer: PROVIDER, consoleOidcClientId: 'svc-console' }, [], { services: true });
  });
  afterAll(async () => {
    await gw?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it.each(['/', '/sessions', '/inbox', '/policy', '/workers/wrk_abc', '/auth/callback'])(
    '%s is the console page, without signing in, with a strict CSP, revalidated each load',
    async (url) => {
      const response = await gw.app.inject({ url });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^text\/html/);
      expect(response.body).toContain('<title>svc console</title>');
      const csp = consoleCsp({ local: false, oidc: { issuer: PROVIDER, client_id: 'svc-console', scope: 'openid' } });
      expect(response.headers['content-security-policy']).toBe(csp);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self' https://id.example.com;");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(response.headers['cache-control']).toBe('no-cache');
      expect(response.headers['x-content-type-options']).toBe('nosniff');
    },
  );

  it('GET /v1/console/sign-in, without a token, tells the sign-in page how to sign in; without a provider only the built-in issuer, if any', async () => {
    const signIn = await gw.app.inject({ url: '/v1/console/sign-in' });
    expect(signIn.statusCode).toBe(200);
    expect(signIn.json()).toEqual({
      local: false,
      oidc: { issuer: PROVIDER, client_id: 'svc-console', scope: 'openid profile offline_access' },
    });
    expect(consoleCsp({ local: true })).toContain("connect-src 'self';");
  });

  it('hashed assets are cached for a year; a missing one is 404, a path out of the folder is refused', async () => {
    const asset = await gw.app.inject({ url: '/assets/index-abc123.js' });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.body).toBe('console.log("console")');
    expect((await gw.app.inject({ url: '/assets/index-nope.js' })).statusCode).toBe(404);
    const escape = await gw.app.inject({ url: '/assets/..%2findex.html' });
    expect([403, 404]).toContain(escape.statusCode);
  });

  it('the API is not the console: /v1 paths still need a token and answer JSON; an unknown page is a 404 APIError', async () => {
    const api = await gw.app.inject({ url: '/v1/sessions' });
    expect(api.statusCode).toBe(401);
    expect(api.json()).toMatchObject({ code: 'unauthorized' });
    const unknown = await gw.app.inject({ url: '/no-such-page' });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ code: 'not_found' });
  });

  it('a browser follows a worker with its token in the WebSocket subprotocols; the gateway answers svc.v1, never the token', async () => {
    const url = (await gw.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
    const worker = await requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
    const token = await gw.userToken('alice');
    const socket = new WebSocket(`${url}/v1/workers/${worker.worker_id}/sdk-events/stream?after_id=0`, ['svc.v1', `bearer.${token}`]);
    const frames: StreamFrame[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(String(data)) as StreamFrame));
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    expect(socket.protocol).toBe('svc.v1');
    await waitFor('the live frame', () => frames.some((frame) => frame.kind === 'live'));
    socket.close();

    // Someone else's token in the subprotocol: refused like a bad Authorization header.
    const mallory = await gw.userToken('mallory');
    const refused = new WebSocket(`${url}/v1/workers/${worker.worker_id}/sdk-events/stream?after_id=0`, ['svc.v1', `bearer.${mallory}`]);
    const status = await new Promise<number>((resolve) => refused.once('unexpected-response', (_request, response) => resolve(response.statusCode ?? 0)));
    expect(status).toBe(404);
  });
});

describe('a gateway without a console build', () => {
  let gw: GatewayFixture;
  beforeAll(async () => {
    gw = await startGatewayFixture({ consoleDir: '/nonexistent/console/dist' });
  });
  afterAll(() => gw?.stop());

  it('/ says the console is not built and how to build it (404, an APIError)', async () => {
    const response = await gw.app.inject({ url: '/' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ code: 'not_found', message: expect.stringContaining('npx nx run @svc/console:build') as unknown as string });
  });
});
