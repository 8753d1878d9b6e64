import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDecisionLink } from '@svc/auth';
import { CHANNEL_HEADER, type ListResponseOf, type StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

type Decision = StoredEvent<'control_response'>;
const LINK_KEY = 'the-decision-link-key-of-this-test-0123456';

describe('gateway — who decides travels to control as a signed user assertion (docs/nats-security.md)', () => {
  let gw: GatewayFixture;
  let alice: string;
  let workerToken: string;
  const workerId = 'wrk_asserting';
  let requests = 0;

  beforeAll(async () => {
    gw = await startGatewayFixture({ decisionLinkKey: LINK_KEY }, [], { services: true });
    alice = await gw.userToken('alice', { name: 'Alice Doe' });
    workerToken = await gw.createWorker(workerId, 'alice');
  }, 60_000);
  afterAll(() => gw?.stop());

  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  /** The sidecar reports a tool request; resolves once the control plane lists it as open. */
  async function askPermission(): Promise<string> {
    const requestId = `req-${++requests}`;
    const event = {
      type: 'control_request',
      uid: `cr-${requestId}`,
      ts: new Date().toISOString(),
      data: { request_id: requestId, tool_name: 'Bash', input: { command: 'ls' } },
    };
    const posted = await gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${workerId}/sdk-events`,
      headers: bearer(workerToken),
      payload: { events: [event] },
    });
    expect(posted.statusCode).toBe(202);
    await waitFor(`${requestId} open`, async () => {
      const open = (await gw.app.inject({ url: `/v1/workers/${workerId}/control/requests?state=open`, headers: bearer(alice) })).json() as ListResponseOf<
        StoredEvent<'control_request'>
      >;
      return open.items.some((request) => request.data.request_id === requestId);
    });
    return requestId;
  }

  const decisionOn = async (requestId: string) =>
    (
      (await gw.app.inject({ url: `/v1/workers/${workerId}/control/pending?after_id=0`, headers: bearer(workerToken) })).json() as ListResponseOf<Decision>
    ).items.find((decision) => decision.data.request_id === requestId);

  it('user assertion — POST /control decides as the authenticated person, through the channel their client names', async () => {
    const requestId = await askPermission();
    const answer = await gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${workerId}/control`,
      headers: { ...bearer(alice), [CHANNEL_HEADER]: 'console' },
      payload: { request_id: requestId, decision: 'allow' },
    });
    expect(answer.statusCode).toBe(201);
    expect(answer.json()).toMatchObject({ source: 'user:console:alice', data: { decided_by: 'alice', decided_by_name: 'Alice Doe' } });
  });

  it("user assertion — a decision link's confirmation decides as the link's person, through the link channel", async () => {
    const requestId = await askPermission();
    const token = await signDecisionLink(LINK_KEY, { workerId, requestId, decision: 'deny', decidedBy: 'alice' }, new Date(Date.now() + 60_000));
    const confirmed = await gw.app.inject({
      method: 'POST',
      url: `/v1/links?token=${encodeURIComponent(token)}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(await decisionOn(requestId)).toMatchObject({ source: 'user:link:alice', data: { decision: 'deny', decided_by: 'alice' } });
  });

  it('user assertion — a gateway without SVC_USER_ASSERTION_KEY refuses to decide (503, saying why) and says so at start', async () => {
    const keyless = await startGatewayFixture({ userAssertionKey: undefined });
    try {
      const token = await keyless.userToken('alice');
      await keyless.createWorker('wrk_keyless', 'alice');
      const answer = await keyless.app.inject({
        method: 'POST',
        url: '/v1/workers/wrk_keyless/control',
        headers: bearer(token),
        payload: { request_id: 'r1', decision: 'allow' },
      });
      expect(answer.statusCode).toBe(503);
      expect(answer.json()).toMatchObject({ code: 'unavailable', message: expect.stringContaining('SVC_USER_ASSERTION_KEY') });
      expect(keyless.logs.join('\n')).toContain('SVC_USER_ASSERTION_KEY is not set');
    } finally {
      await keyless.stop();
    }
  });
});
