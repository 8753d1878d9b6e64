import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGatewayFixture, testRoutesWith, type GatewayFixture } from '../test/fixture.js';

describe('gateway authorization — a user reaches only the workers that user spawned', () => {
  let gw: GatewayFixture;
  beforeAll(async () => {
    gw = await startGatewayFixture({}, [testRoutesWith(() => gw.workers)]);
    await gw.createWorker('wrk_alice', 'alice');
  });
  afterAll(() => gw?.stop());

  const view = async (workerId: string, sub: string, claims: Record<string, unknown> = {}) =>
    gw.app.inject({ url: `/v1/workers/${workerId}/test-view`, headers: { authorization: `Bearer ${await gw.userToken(sub, claims)}` } });

  it('the owner reaches the worker', async () => {
    const response = await view('wrk_alice', 'alice');
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ worker_id: 'wrk_alice', owner: 'alice' });
  });

  it('another user gets 404, the same answer as for a worker that does not exist', async () => {
    const other = await view('wrk_alice', 'bob');
    const missing = await view('wrk_missing', 'bob');
    expect(other.statusCode).toBe(404);
    expect(other.json()).toEqual({ code: 'worker_not_found', message: 'worker wrk_alice does not exist' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json().code).toBe('worker_not_found');
  });

  it('a user with the admin claim reaches every worker', async () => {
    expect((await view('wrk_alice', 'root', { svc_admin: true })).statusCode).toBe(200);
    expect((await view('wrk_alice', 'root', { svc_admin: false })).statusCode).toBe(404);
  });

  it('GET /v1/workers/{id}: the owner sees the worker (never its token hash), anyone else 404', async () => {
    const mine = await gw.app.inject({ url: '/v1/workers/wrk_alice', headers: { authorization: `Bearer ${await gw.userToken('alice')}` } });
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toMatchObject({ worker_id: 'wrk_alice', owner: 'alice', status: 'running' });
    expect(mine.json()).not.toHaveProperty('token_hash');
    const theirs = await gw.app.inject({ url: '/v1/workers/wrk_alice', headers: { authorization: `Bearer ${await gw.userToken('bob')}` } });
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json().code).toBe('worker_not_found');
  });
});
