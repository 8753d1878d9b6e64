import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalIssuer, type LocalIssuer } from '@svc/auth';
import { requestJson } from '@svc/bus';
import { apiPaths, subjects, type CreateWorkerResultType } from '@svc/protocol';
import { systemEvent } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

describe('gateway listeners — the worker port serves the sidecar routes alone; the public one checks its name', () => {
  let gw: GatewayFixture;
  let stateDir: string;
  let localIssuer: LocalIssuer;
  let worker: CreateWorkerResultType;
  let workerPort: string;
  beforeAll(async () => {
    stateDir = await mkdtemp(path.join(tmpdir(), 'svc-listeners-'));
    localIssuer = await createLocalIssuer({ stateDir, issuer: 'http://127.0.0.1:8080' });
    gw = await startGatewayFixture({}, [], { services: true, localIssuer });
    worker = await requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
    await new Promise<void>((resolve) => gw.app.workerListener.listen(0, '127.0.0.1', resolve));
    workerPort = `http://127.0.0.1:${(gw.app.workerListener.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  /** What a sandbox can do: HTTP to the worker port, with whatever token it holds or made up. */
  const fromSandbox = (route: string, init: { method?: string; token?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    fetch(`${workerPort}${route}`, {
      method: init.method ?? 'GET',
      headers: {
        ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...init.headers,
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    });

  it("listeners — through the worker port a sidecar's routes answer as on the public listener", async () => {
    const posted = await fromSandbox(apiPaths.sdkEvents(worker.worker_id), { method: 'POST', token: worker.token, body: systemEvent('via-worker-port') });
    expect(posted.status).toBe(202);
    expect((await fromSandbox(apiPaths.pendingInputs(worker.worker_id, { after_id: '0' }), { token: worker.token })).status).toBe(200);
    expect((await fromSandbox(apiPaths.permissionRules(worker.worker_id), { token: worker.token })).status).toBe(200);
  });

  it('listeners — through the worker port no route of a person exists: the local issuer, the API, the console, the docs answer 404', async () => {
    const alice = await gw.userToken('alice', { svc_admin: true });
    const probes: Array<[string, { method?: string; token?: string; body?: unknown }]> = [
      [apiPaths.localToken, { method: 'POST', body: { code: localIssuer.signInCode } }],
      [apiPaths.localToken, { method: 'POST' }],
      ['/.well-known/jwks.json', {}],
      [apiPaths.status, { token: alice }],
      [apiPaths.sessions(), { token: alice }],
      [apiPaths.sessions(), { method: 'POST', token: alice, body: { template: 'demo' } }],
      [apiPaths.sdkEvents(worker.worker_id), { token: alice }],
      [apiPaths.sdkEvents(worker.worker_id), { token: worker.token }],
      [apiPaths.control(worker.worker_id), { method: 'POST', token: alice, body: { request_id: 'r1', decision: 'allow' } }],
      [apiPaths.controlRequests(worker.worker_id), { token: alice }],
      [apiPaths.audit(), { token: alice }],
      [apiPaths.webhooks, { token: alice }],
      ['/openapi.json', {}],
      ['/docs/', {}],
      ['/no/such/route', {}],
    ];
    for (const [route, init] of probes) {
      const answer = await fromSandbox(route, init);
      expect(answer.status, `${init.method ?? 'GET'} ${route}`).toBe(404);
      expect(await answer.json()).toMatchObject({ code: 'not_found' });
    }
    // A route either side may call takes the worker's token only here: a person's token is refused.
    const asPerson = await fromSandbox(apiPaths.permissionRules(worker.worker_id), { token: alice });
    expect(asPerson.status).toBe(403);
  });

  it('listeners — a WebSocket stream cannot be opened through the worker port', async () => {
    const alice = await gw.userToken('alice');
    const socket = new WebSocket(`${workerPort.replace('http', 'ws')}${apiPaths.eventStream(worker.worker_id, '0')}`, {
      headers: { authorization: `Bearer ${alice}` },
    });
    const outcome = await new Promise<string>((resolve) => {
      socket.on('open', () => resolve('open'));
      socket.on('unexpected-response', (_request, response) => resolve(`http ${response.statusCode}`));
      socket.on('error', (err) => resolve(`error ${err.message}`));
    });
    socket.terminate();
    expect(outcome).toBe('http 404');
  });

  it('listeners — the public listener answers to its own names only: a page that renamed it (DNS rebinding) is refused', async () => {
    const alice = await gw.userToken('alice');
    for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080']) {
      const answer = await gw.app.inject({ url: apiPaths.status, headers: { host, authorization: `Bearer ${alice}` } });
      expect(answer.statusCode, host).toBe(200);
    }
    for (const host of ['attacker.example', 'attacker.example:8080', '127.0.0.1.nip.io:8080']) {
      const local = await gw.app.inject({ method: 'POST', url: apiPaths.localToken, headers: { host }, payload: { code: localIssuer.signInCode } });
      expect(local.statusCode, host).toBe(403);
      expect(local.json()).toMatchObject({ code: 'forbidden', message: expect.stringContaining('SVC_GATEWAY_ALLOWED_HOSTS') });
      expect(local.body).not.toContain(localIssuer.signInCode);
    }
  });
});
