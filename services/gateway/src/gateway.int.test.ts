import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson, serveHealth, serveRpc } from '@svc/bus';
import { signedInAt } from '@svc/auth';
import { subjects, type ServiceHealth } from '@svc/protocol';
import { ConfigError, readConfig } from '@svc/service-kit';
import { freePort, localSignInCode, localUserToken, startBusFixture, type BusFixture } from '@svc/test-support';
import { gatewaySettings } from './config.js';
import { start } from './index.js';
import { LOCAL_SIGN_IN_MAX_AGE_S } from './routes/local-issuer.js';

/** A JWT's claims, read without checking (the gateway checked it). */
const claimsOf = (token: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;

/** A gateway that is its own issuer, on `port`, its state in `stateDir`. */
const issuerConfig = (port: number, stateDir: string, more: Record<string, string> = {}) =>
  readConfig(gatewaySettings, {
    SVC_LOCAL_ISSUER: 'true',
    SVC_GATEWAY_PORT: String(port),
    SVC_GATEWAY_WORKER_PORT: '0',
    SVC_STATE_DIR: stateDir,
    SVC_LOG_LEVEL: 'silent',
    ...more,
  });

describe('gateway — start with the built-in issuer, status and probes', () => {
  let bus: BusFixture;
  let stateDir: string;
  beforeAll(async () => {
    bus = await startBusFixture();
    stateDir = await mkdtemp(path.join(tmpdir(), 'svc-gw-'));
  });
  afterAll(async () => {
    await bus?.stop();
    await rm(stateDir, { recursive: true, force: true });
  });

  it("serves discovery, gives the local user a token for the stack's sign-in code, and that token reads /v1/status", async () => {
    const port = await freePort();
    const config = issuerConfig(port, stateDir);
    const gateway = await start({ nc: bus.nc, logger: bus.logger, instance: 'gw-0', config });
    try {
      const discovery = await (await fetch(`${gateway.url}/.well-known/openid-configuration`)).json();
      expect(discovery).toMatchObject({ issuer: `http://127.0.0.1:${port}`, jwks_uri: `http://127.0.0.1:${port}/.well-known/jwks.json` });
      const token = await localUserToken(gateway.url, stateDir);

      // A renewal carries the sign-in with the code on; one older than a week asks for the code again.
      const renew = (bearer: string) => fetch(`${gateway.url}/v1/local/token`, { method: 'POST', headers: { authorization: `Bearer ${bearer}` } });
      const renewed = await renew(token);
      expect(renewed.status).toBe(200);
      expect(signedInAt(((await renewed.json()) as { token: string }).token)).toBe(signedInAt(token));
      const weekOld = Math.floor(Date.now() / 1000) - LOCAL_SIGN_IN_MAX_AGE_S - 60;
      const stale = await gateway.localIssuer!.mintUserToken({ sub: 'local-user', audience: 'svc', admin: true, authTime: weekOld });
      expect((await renew(stale)).status).toBe(403);

      // Only the gateway is up: status still answers, and says which services are down.
      const degraded = await fetch(`${gateway.url}/v1/status`, { headers: { authorization: `Bearer ${token}` } });
      expect(degraded.status).toBe(200);
      const body = (await degraded.json()) as { status: string; nats: string; store: string; services: ServiceHealth[] };
      expect(body).toMatchObject({ status: 'degraded', nats: 'up', store: 'down' });
      expect(body.services.find((s) => s.service === 'gateway')?.status).toBe('up');
      expect(body.services.find((s) => s.service === 'control')?.status).toBe('down');

      // With every service answering (and one reaching its store), status is ok.
      const fakes = (['event-ingest', 'control', 'session'] as const).map((service) =>
        serveHealth(bus.nc, service, { instance: `${service}-0`, logger: bus.logger, ...(service === 'event-ingest' ? { probeStore: async () => true } : {}) }),
      );
      const ok = (await (await fetch(`${gateway.url}/v1/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as { status: string };
      expect(ok.status).toBe('ok');
      for (const fake of fakes) fake.unsubscribe();

      // The request id travels to the services in the NATS headers of the status requests.
      const seenRequestIds: Array<string | undefined> = [];
      const recorder = serveRpc(
        bus.nc,
        subjects.health('session'),
        (_request, context) => {
          seenRequestIds.push(context.requestId);
          return { service: 'session', status: 'up', version: 'test', instance: 'recorder', uptime_s: 0 };
        },
        { logger: bus.logger },
      );
      await fetch(`${gateway.url}/v1/status`, { headers: { authorization: `Bearer ${token}`, 'x-request-id': 'trace-to-session' } });
      recorder.unsubscribe();
      expect(seenRequestIds).toEqual(['trace-to-session']);

      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
      expect((await requestJson<ServiceHealth>(bus.nc, subjects.health('gateway'), {})).instance).toBe('gw-0');
    } finally {
      await gateway.stop();
    }
  });

  it('SVC_LOCAL_USERS: the sign-in code signs in a named user with their groups, never an admin; an unknown one is refused; a renewal keeps its user', async () => {
    const port = await freePort();
    const config = issuerConfig(port, stateDir, { SVC_LOCAL_USERS: JSON.stringify({ bob: { name: 'Bob', groups: ['payments', 'release'] }, carol: {} }) });
    const gateway = await start({ nc: bus.nc, logger: bus.logger, instance: 'gw-users', config });
    try {
      const code = await localSignInCode(stateDir);
      const tokenFor = (body: object) =>
        fetch(`${gateway.url}/v1/local/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const bob = ((await (await tokenFor({ code, user: 'bob' })).json()) as { token: string }).token;
      expect(claimsOf(bob)).toMatchObject({ sub: 'bob', name: 'Bob', groups: ['payments', 'release'] });
      expect(claimsOf(bob)).not.toHaveProperty('svc_admin');
      const whoami = await fetch(`${gateway.url}/v1/status`, { headers: { authorization: `Bearer ${bob}` } });
      expect(whoami.status).toBe(200);

      const unknown = await tokenFor({ code, user: 'mallory' });
      expect(unknown.status).toBe(400);
      expect(await unknown.json()).toMatchObject({
        code: 'invalid_request',
        message: "/body/user: mallory is not one of this stack's users (SVC_LOCAL_USERS names bob, carol)",
      });
      expect((await tokenFor({ code: 'not-the-code', user: 'bob' })).status).toBe(403);

      const renewed = await fetch(`${gateway.url}/v1/local/token`, { method: 'POST', headers: { authorization: `Bearer ${bob}` } });
      expect(claimsOf(((await renewed.json()) as { token: string }).token)).toMatchObject({ sub: 'bob', groups: ['payments', 'release'] });
    } finally {
      await gateway.stop();
    }
  });

  it('a malformed SVC_LOCAL_USERS stops the start, naming the variable', () => {
    expect(() => readConfig(gatewaySettings, { SVC_LOCAL_USERS: '{"bob": {"groups": "payments"}}' })).toThrow(/SVC_LOCAL_USERS: .*groups/);
    expect(() => readConfig(gatewaySettings, { SVC_LOCAL_USERS: 'bob' })).toThrow(/SVC_LOCAL_USERS must be a JSON object/);
  });

  it('status answers within about a second even when a service never replies', async () => {
    const port = await freePort();
    const config = readConfig(gatewaySettings, {
      SVC_LOCAL_ISSUER: 'true',
      SVC_GATEWAY_PORT: String(port),
      SVC_GATEWAY_WORKER_PORT: '0',
      SVC_STATE_DIR: stateDir,
    });
    const gateway = await start({ nc: bus.nc, logger: bus.logger, instance: 'gw-1', config });
    const silent = bus.nc.subscribe(subjects.health('control'), { callback: () => {} });
    try {
      const token = await localUserToken(gateway.url, stateDir);
      const started = Date.now();
      const response = await fetch(`${gateway.url}/v1/status`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      silent.unsubscribe();
      await gateway.stop();
    }
  });

  it('readyz answers 503 bus_unavailable, with Retry-After, once NATS is gone', async () => {
    const own = await startBusFixture();
    const port = await freePort();
    const config = readConfig(gatewaySettings, {
      SVC_LOCAL_ISSUER: 'true',
      SVC_GATEWAY_PORT: String(port),
      SVC_GATEWAY_WORKER_PORT: '0',
      SVC_STATE_DIR: stateDir,
    });
    const gateway = await start({ nc: own.nc, logger: own.logger, instance: 'gw-2', config });
    try {
      await own.nc.close();
      const response = await fetch(`${gateway.url}/readyz`);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toBe('1');
      expect(await response.json()).toMatchObject({ code: 'bus_unavailable' });
    } finally {
      await gateway.stop().catch(() => {});
      await own.stop();
    }
  });

  it('without an issuer configured, start-up stops with a message naming the variable', async () => {
    const config = readConfig(gatewaySettings, {});
    await expect(start({ nc: bus.nc, logger: bus.logger, instance: 'gw-x', config })).rejects.toThrow(ConfigError);
    await expect(start({ nc: bus.nc, logger: bus.logger, instance: 'gw-x', config })).rejects.toThrow(/SVC_OIDC_ISSUER is required/);
  });
});
