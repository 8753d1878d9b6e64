import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveRpc } from '@svc/bus';
import { CodedError, subjects, type AuditVerification } from '@svc/protocol';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

const tampered: AuditVerification = {
  ok: false,
  count: 4,
  unkeyed: 0,
  heads: 1,
  latest_head: { seq: 6, hash: 'a'.repeat(64), key_id: '0123456789abcdef', keyed_from: 1, published_at: '2026-11-26T12:00:00.000Z', instance: 'control-0' },
  seq: 5,
  problem: 'the head published at 2026-11-26T12:00:00.000Z (#6) is missing: the chain ends at #4, records #5-#6 were deleted',
};

describe('gateway — GET /v1/audit/verify: the control service checks the trail, admins read its answer', () => {
  let gw: GatewayFixture;
  /** What the stand-in control service answers. */
  let answer: () => AuditVerification = () => tampered;
  beforeAll(async () => {
    gw = await startGatewayFixture();
    // A stand-in of control's side (services/control/src/audit.int.test.ts checks the real one).
    serveRpc(gw.bus.nc, subjects.rpc.verifyAudit, () => answer(), { logger: gw.bus.logger });
    await gw.bus.nc.flush();
  });
  afterAll(() => gw?.stop());

  const verify = async (claims: Record<string, unknown>) =>
    gw.app.inject({ url: '/v1/audit/verify', headers: { authorization: `Bearer ${await gw.userToken('ops', claims)}` } });

  it("audit verify route — an admin gets control's verification as it is, the first failing record named", async () => {
    const response = await verify({ svc_admin: true });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual(tampered);
    answer = () => ({ ok: true, count: 0, unkeyed: 0, heads: 0 });
    expect((await verify({ svc_admin: true })).json()).toEqual({ ok: true, count: 0, unkeyed: 0, heads: 0 });
  });

  it('audit verify route — anyone else gets 403, and control is not asked', async () => {
    let asked = false;
    answer = () => ((asked = true), tampered);
    const refused = await verify({});
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ code: 'forbidden', message: 'the audit trail is for admins' });
    expect((await gw.app.inject({ url: '/v1/audit/verify' })).statusCode).toBe(401);
    expect(asked).toBe(false);
  });

  it("audit verify route — control's error reaches the admin with its code", async () => {
    answer = () => {
      throw new CodedError('store_unavailable', 'the database is unavailable; retry shortly');
    };
    const response = await verify({ svc_admin: true });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ code: 'store_unavailable' });
  });
});
