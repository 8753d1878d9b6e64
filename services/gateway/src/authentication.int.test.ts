import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateWorkerToken, hashWorkerToken } from '@svc/auth';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const now = () => Math.floor(Date.now() / 1000);

describe('gateway authentication — user JWTs', () => {
  let gw: GatewayFixture;
  beforeAll(async () => {
    gw = await startGatewayFixture();
  });
  afterAll(() => gw?.stop());

  const call = (authorization?: string) => gw.app.inject({ url: '/v1/test/whoami', headers: authorization === undefined ? {} : { authorization } });

  it('a valid token reaches the route as that user', async () => {
    const response = await call(`Bearer ${await gw.userToken('alice', { name: 'Alice', email: 'a@example.com' })}`);
    expect(response.statusCode).toBe(200);
    expect(response.json().principal).toEqual({ kind: 'user', sub: 'alice', name: 'Alice', email: 'a@example.com', groups: [], admin: false });
  });

  const attacks: Array<[string, () => Promise<string | undefined>]> = [
    [
      'alg none',
      async () => `Bearer ${base64url({ alg: 'none', typ: 'JWT' })}.${base64url({ sub: 'mallory', iss: gw.issuer.issuer, aud: 'svc', exp: now() + 60 })}.`,
    ],
    [
      'HS256 signed with the public key',
      async () => {
        const header = base64url({ alg: 'HS256', typ: 'JWT', kid: 'key-1' });
        const payload = base64url({ sub: 'mallory', iss: gw.issuer.issuer, aud: 'svc', exp: now() + 60 });
        return `Bearer ${header}.${payload}.${createHmac('sha256', JSON.stringify(gw.issuer.publicJwk)).update(`${header}.${payload}`).digest('base64url')}`;
      },
    ],
    ['wrong iss', async () => `Bearer ${await gw.issuer.sign({ iss: 'https://evil.example' })}`],
    ['wrong aud', async () => `Bearer ${await gw.issuer.sign({ aud: 'other' })}`],
    ['expired', async () => `Bearer ${await gw.issuer.sign({ exp: now() - 300 })}`],
    ['not yet valid', async () => `Bearer ${await gw.issuer.sign({ nbf: now() + 300 })}`],
    ['unknown kid', async () => `Bearer ${await gw.issuer.sign({}, { kid: 'no-such-key' })}`],
    [
      'tampered signature',
      async () => {
        const [header, , signature] = (await gw.issuer.sign()).split('.');
        return `Bearer ${header}.${base64url({ sub: 'admin', iss: gw.issuer.issuer, aud: 'svc', exp: now() + 60, svc_admin: true })}.${signature}`;
      },
    ],
    ['missing header', async () => undefined],
    ['wrong scheme', async () => `Basic ${(await gw.issuer.sign()).slice(0, 20)}`],
  ];

  it.each(attacks)('401 for %s, with an APIError that does not echo the token', async (_title, makeHeader) => {
    const header = await makeHeader();
    const response = await call(header);
    expect(response.statusCode).toBe(401);
    expect(response.json()).toMatchObject({ code: 'unauthorized' });
    if (header) expect(response.body).not.toContain(header.slice(7));
  });

  it('a user token on a sidecar endpoint is refused', async () => {
    await gw.createWorker('wrk_user_on_sidecar', 'alice');
    const response = await gw.app.inject({
      url: '/v1/workers/wrk_user_on_sidecar/test-sidecar',
      headers: { authorization: `Bearer ${await gw.userToken('alice')}` },
    });
    expect(response.statusCode).toBe(403);
  });
});

describe('gateway authentication — worker tokens', () => {
  let gw: GatewayFixture;
  beforeAll(async () => {
    gw = await startGatewayFixture();
  });
  afterAll(() => gw?.stop());

  const sidecarCall = (workerId: string, token: string) =>
    gw.app.inject({ url: `/v1/workers/${workerId}/test-sidecar`, headers: { authorization: `Bearer ${token}` } });

  it("a worker token opens its own worker's sidecar endpoints", async () => {
    const token = await gw.createWorker('wrk_a', 'alice');
    const response = await sidecarCall('wrk_a', token);
    expect(response.statusCode).toBe(200);
    expect(response.json().principal).toEqual({ kind: 'worker', workerId: 'wrk_a' });
  });

  it("on another worker's endpoint it is refused (403), and on a user endpoint too", async () => {
    const tokenA = await gw.createWorker('wrk_b1', 'alice');
    await gw.createWorker('wrk_b2', 'alice');
    // The directory knows whose token it is once it has seen wrk_b1 (from its watch or a read).
    await waitFor('the directory to know wrk_b1', () => gw.workers.get('wrk_b1'));
    expect((await sidecarCall('wrk_b2', tokenA)).statusCode).toBe(403);
    const userRoute = await gw.app.inject({ url: '/v1/test/whoami', headers: { authorization: `Bearer ${tokenA}` } });
    expect(userRoute.statusCode).toBe(403);
    expect(userRoute.json().message).toMatch(/worker token is valid only on its worker's sidecar endpoints/);
  });

  it('an unknown token is 401, an unknown worker 404 worker_not_found, a user-shaped token 403', async () => {
    await gw.createWorker('wrk_c', 'alice');
    expect((await sidecarCall('wrk_c', generateWorkerToken())).statusCode).toBe(401);
    const unknown = await sidecarCall('wrk_nobody', generateWorkerToken());
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('worker_not_found');
    expect((await sidecarCall('wrk_c', 'svcw_short')).statusCode).toBe(403);
  });

  it('a revoked token is refused within 1 s: worker ended (409 worker_ended), token removed (401), record deleted (404)', async () => {
    for (const revoke of ['ended', 'token removed', 'deleted'] as const) {
      const workerId = `wrk_revoke_${revoke.replace(' ', '_')}`;
      const token = await gw.createWorker(workerId, 'alice');
      expect((await sidecarCall(workerId, token)).statusCode).toBe(200);
      const revokedAt = Date.now();
      if (revoke === 'ended')
        await gw.setWorker({
          worker_id: workerId,
          owner: 'alice',
          status: 'stopped',
          token_hash: (await gw.workers.get(workerId))!.token_hash!,
          updated_at: new Date().toISOString(),
        });
      if (revoke === 'token removed') await gw.setWorker({ worker_id: workerId, owner: 'alice', status: 'running', updated_at: new Date().toISOString() });
      if (revoke === 'deleted') await gw.kv.delete(workerId);
      const refusal = { ended: 409, 'token removed': 401, deleted: 404 }[revoke];
      await waitFor(`${revoke} to be refused`, async () => (await sidecarCall(workerId, token)).statusCode === refusal, 1000, 5);
      expect(Date.now() - revokedAt).toBeLessThan(1000);
    }
  });

  it('a worker given a new token: the old one, accepted (and remembered) just before, is refused within 1 s', async () => {
    const previous = await gw.createWorker('wrk_rotate', 'alice');
    expect((await sidecarCall('wrk_rotate', previous)).statusCode).toBe(200);
    expect((await sidecarCall('wrk_rotate', previous)).statusCode).toBe(200);
    const next = generateWorkerToken();
    await gw.setWorker({ worker_id: 'wrk_rotate', owner: 'alice', status: 'running', token_hash: hashWorkerToken(next), updated_at: new Date().toISOString() });
    await waitFor('the new token to be accepted', async () => (await sidecarCall('wrk_rotate', next)).statusCode === 200, 1000, 5);
    const refused = await sidecarCall('wrk_rotate', previous);
    expect(refused.statusCode).toBe(401);
    expect(refused.json().code).toBe('unauthorized');
  });

  it('a token is never written to the logs', async () => {
    gw.logs.length = 0;
    const token = await gw.createWorker('wrk_logs', 'alice');
    await sidecarCall('wrk_logs', token);
    await sidecarCall('wrk_other', token);
    expect(gw.logs.length).toBeGreaterThan(0);
    expect(gw.logs.join('\n')).not.toContain(token);
  });
});
