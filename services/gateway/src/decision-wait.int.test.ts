import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjects } from '@svc/protocol';
import { decisionAnswerWithinMs } from '@svc/service-kit';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

/** The control service's wait for a decision's writer, as this gateway is told it (SVC_DECISION_WAIT_MS, SVC_DECISION_TRY_MS). */
const WAIT = { decisionWaitMs: 600, decisionTryMs: 200 };

describe("gateway — a person's decision waits as long as the control service may take to store it", () => {
  let gw: GatewayFixture;
  let alice: string;
  const workerId = 'wrk_waiting';

  beforeAll(async () => {
    gw = await startGatewayFixture(WAIT);
    alice = await gw.userToken('alice');
    await gw.createWorker(workerId, 'alice');
  }, 60_000);
  afterAll(() => gw?.stop());

  it('answers 504 with Retry-After only after the control service had its whole wait, never before', async () => {
    // A control replica that takes the decision and is still waiting for its writer.
    const waiting = gw.bus.nc.subscribe(subjects.rpc.decide, { callback: () => undefined });
    try {
      const started = Date.now();
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${workerId}/control`,
        headers: { authorization: `Bearer ${alice}` },
        payload: { request_id: 'r1', decision: 'allow' },
      });
      const waited = Date.now() - started;
      expect(answer.statusCode).toBe(504);
      expect(answer.headers['retry-after']).toBeDefined();
      expect(answer.json()).toMatchObject({ code: 'timeout' });
      expect(waited).toBeGreaterThanOrEqual(WAIT.decisionWaitMs + WAIT.decisionTryMs);
      // The wait follows the settings (a request's default would be 5 s).
      expect(waited).toBeLessThan(decisionAnswerWithinMs(WAIT) + 2_000);
    } finally {
      waiting.unsubscribe();
    }
  });

  it('a decision answered late within that wait is the 201 of the person who made it', async () => {
    const late = gw.bus.nc.subscribe(subjects.rpc.decide, {
      callback: (_err, msg) => {
        setTimeout(
          () =>
            msg.respond(
              JSON.stringify({
                ok: true,
                result: {
                  type: 'control_response',
                  id: '2',
                  worker_id: workerId,
                  uid: 'cresp-r2',
                  ts: new Date().toISOString(),
                  source: 'user:api:alice',
                  data: { request_id: 'r2', decision: 'allow', decided_by: 'alice' },
                },
              }),
            ),
          WAIT.decisionWaitMs + WAIT.decisionTryMs / 2,
        );
      },
    });
    try {
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${workerId}/control`,
        headers: { authorization: `Bearer ${alice}` },
        payload: { request_id: 'r2', decision: 'allow' },
      });
      expect(answer.statusCode).toBe(201);
      expect(answer.json()).toMatchObject({ data: { request_id: 'r2', decided_by: 'alice' } });
    } finally {
      late.unsubscribe();
    }
  });
});
