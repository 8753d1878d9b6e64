import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { TINY_PNG_BASE64 } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

describe("people's message images — NATS, where they are kept, gone", () => {
  let gw: GatewayFixture;
  let alice: string;
  let workerToken: string;
  const workerId = 'wrk_images_away';

  beforeAll(async () => {
    gw = await startGatewayFixture();
    alice = await gw.userToken('alice');
    workerToken = await gw.createWorker(workerId, 'alice', 'running', { mode: 'conversation' });
  }, 60_000);
  afterAll(() => gw?.stop());

  it('a message with an image is answered 503 with Retry-After, and an image read too: nothing half-sent', async () => {
    // The worker's record is read before NATS goes (the directory keeps what it watched).
    expect(
      (await gw.app.inject({ url: `/v1/workers/${workerId}/messages/images/${'0'.repeat(64)}`, headers: { authorization: `Bearer ${alice}` } })).statusCode,
    ).toBe(404);
    await gw.bus.nc.close();
    const sent = await gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${workerId}/messages`,
      headers: { authorization: `Bearer ${alice}` },
      payload: { text: 'look', images: [{ media_type: 'image/png', data: TINY_PNG_BASE64 }] },
    });
    expect(sent.statusCode).toBe(503);
    expect(sent.headers['retry-after']).toBeDefined();
    expect(sent.json()).toMatchObject({ code: 'unavailable', message: expect.stringContaining('images could not be kept') });
    const sha256 = createHash('sha256').update(Buffer.from(TINY_PNG_BASE64, 'base64')).digest('hex');
    const read = await gw.app.inject({ url: `/v1/workers/${workerId}/messages/images/${sha256}`, headers: { authorization: `Bearer ${workerToken}` } });
    expect(read.statusCode).toBe(503);
    expect(read.headers['retry-after']).toBeDefined();
  });
});
