import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as Verifier } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedWebhook, ListResponseOf, Webhook, WebhookAttempt, WebhookPayload } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { controlClient } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';
import { bashRequest, postAsWorker } from './worker-events.js';

/** The retry window of this stack: a receiver failing this long is disabled. */
const WINDOW_S = 60;

interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  answered: number;
}

/** A webhook receiver: answers what `answer()` says, and keeps every delivery. */
async function startReceiver(answer: () => number): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const status = answer();
      received.push({
        id: String(request.headers['webhook-id']),
        timestamp: String(request.headers['webhook-timestamp']),
        signature: String(request.headers['webhook-signature']),
        body,
        answered: status,
      });
      response.writeHead(status).end(status === 200 ? 'ok' : 'receiver down');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, server };
}

describe('webhooks: signed, durable, retried, disabled when the receiver never answers (every service its own process)', () => {
  let stack: E2eStack;
  const servers: Server[] = [];
  beforeAll(async () => {
    stack = await startStack({
      env: { SVC_WEBHOOK_RETRY_FIRST_MS: '500', SVC_WEBHOOK_RETRY_MAX_MS: '2000', SVC_WEBHOOK_RETRY_WINDOW_S: String(WINDOW_S) },
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
  }, 60_000);

  const api = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  it('a receiver down for 30 s (and control killed meanwhile) gets every notification once per id, signed; one that never answers is disabled, and says why', async () => {
    const token = await stack.userToken('hook-user');
    const started = Date.now();
    const flaky = await startReceiver(() => (Date.now() - started < 30_000 ? 500 : 200));
    const dead = await startReceiver(() => 500);
    servers.push(flaky.server, dead.server);

    // Refusals first: scope "all" is for admins; a bad URL names the field.
    const notAdmin = await api(token, 'POST', '/v1/webhooks', { url: flaky.url, kinds: ['worker.ended'], scope: 'all' });
    expect(notAdmin).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    const badUrl = await api(token, 'POST', '/v1/webhooks', { url: 'ftp://example.com', kinds: ['worker.ended'] });
    expect(badUrl.status).toBe(400);
    expect(JSON.stringify(badUrl.body)).toContain('url');

    const created = await api(token, 'POST', '/v1/webhooks', { url: flaky.url, kinds: ['request.needs_decision', 'request.decided', 'worker.ended'] });
    expect(created.status).toBe(201);
    const subscription = created.body as CreatedWebhook;
    expect(subscription.secret).toMatch(/^whsec_/);
    const doomed = (await api(token, 'POST', '/v1/webhooks', { url: dead.url, kinds: ['request.needs_decision'] })).body as CreatedWebhook;
    // The secret is shown once: the list does not carry it.
    const listed = (await api(token, 'GET', '/v1/webhooks')).body as ListResponseOf<Webhook>;
    expect(listed.items.map((webhook) => webhook.id).sort()).toEqual([subscription.id, doomed.id].sort());
    expect(JSON.stringify(listed)).not.toContain(subscription.secret);
    // Someone else sees none of them.
    const stranger = await stack.userToken('someone-else');
    expect((await api(stranger, 'GET', `/v1/webhooks/${subscription.id}/attempts`)).status).toBe(404);
    expect(((await api(stranger, 'GET', '/v1/webhooks')).body as ListResponseOf<Webhook>).items).toEqual([]);

    // A request that waits, a person's decision, the agent's exit: three notifications.
    const worker = await stack.createWorker('hook-user');
    expect(await postAsWorker(stack.gatewayUrl, worker, [bashRequest('r1', 'rm -rf build')])).toBe(202);
    await waitFor('the request is open', async () => (await controlClient(stack.gatewayUrl, token).openRequests(worker.worker_id)).length === 1, 10_000);
    expect((await controlClient(stack.gatewayUrl, token).decide(worker.worker_id, { request_id: 'r1', decision: 'allow' })).status).toBe(201);
    expect(
      await postAsWorker(stack.gatewayUrl, worker, [
        { type: 'system', uid: 'exit-1', data: { level: 'info', subtype: 'agent_exit', message: 'the agent exited', details: { code: 0 } } },
      ]),
    ).toBe(202);

    // The receiver fails them; the delivering service is killed -9 in the middle of the outage.
    await waitFor('failed tries reach the receiver', () => flaky.received.length >= 3, 20_000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 10_000 - (Date.now() - started))));
    const restartControl = await stack.killService('control');
    restartControl();

    await waitFor('each notification answered 200', () => new Set(flaky.received.filter((r) => r.answered === 200).map((r) => r.id)).size === 3, 90_000);
    const delivered = flaky.received.filter((r) => r.answered === 200);
    // Once per id: nothing answered 200 is sent again (a short wait for a stray repeat).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(flaky.received.filter((r) => r.answered === 200)).toHaveLength(3);
    expect(flaky.received.some((r) => r.answered === 500)).toBe(true);
    // Every try is signed, and verifies with the reference verifier (the secret shown at creation).
    const verifier = new Verifier(subscription.secret);
    for (const r of flaky.received) verifier.verify(r.body, { 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
    expect(() =>
      verifier.verify(`${delivered[0]!.body} `, {
        'webhook-id': delivered[0]!.id,
        'webhook-timestamp': delivered[0]!.timestamp,
        'webhook-signature': delivered[0]!.signature,
      }),
    ).toThrow();
    const payloads = delivered.map((r) => JSON.parse(r.body) as WebhookPayload);
    expect(payloads.map((p) => p.type).sort()).toEqual(['request.decided', 'request.needs_decision', 'worker.ended']);
    expect(payloads.find((p) => p.type === 'request.needs_decision')!.data).toMatchObject({
      worker_id: worker.worker_id,
      owner: 'hook-user',
      request_id: 'r1',
      tool_name: 'Bash',
      input: { command: 'rm -rf build' },
    });
    expect(payloads.find((p) => p.type === 'request.decided')!.data).toMatchObject({ request_id: 'r1', decision: 'allow', decided_by: 'hook-user' });
    expect(payloads.find((p) => p.type === 'worker.ended')!.data).toMatchObject({ exit_code: 0 });
    // Every try is listed: the failures with the receiver's status, then the delivery.
    const attempts = ((await api(token, 'GET', `/v1/webhooks/${subscription.id}/attempts`)).body as ListResponseOf<WebhookAttempt>).items;
    expect(attempts.filter((a) => a.delivered)).toHaveLength(3);
    expect(attempts.filter((a) => !a.delivered).every((a) => a.status === 500 && a.error === 'receiver down')).toBe(true);
    expect(attempts.length).toBe(flaky.received.length);

    // The receiver that never answers is disabled once the window is over, with the reason.
    await waitFor(
      'the dead receiver disabled',
      async () => ((await api(token, 'GET', '/v1/webhooks')).body as ListResponseOf<Webhook>).items.find((w) => w.id === doomed.id)?.disabled_at != null,
      (WINDOW_S + 30) * 1000,
      500,
    );
    const disabled = ((await api(token, 'GET', '/v1/webhooks')).body as ListResponseOf<Webhook>).items.find((w) => w.id === doomed.id)!;
    expect(disabled.disabled_reason).toMatch(new RegExp(`^every try failed for ${WINDOW_S} s \\(\\d+ tries\\); the last: HTTP 500$`));
    expect(dead.received.length).toBeGreaterThan(3);
    expect((await api(token, 'GET', '/v1/webhooks')).body).toMatchObject({
      items: expect.arrayContaining([expect.objectContaining({ id: subscription.id, disabled_at: null })]),
    });

    // Deleted: gone from the list.
    expect((await api(token, 'DELETE', `/v1/webhooks/${doomed.id}`)).status).toBe(204);
    expect((await api(token, 'DELETE', `/v1/webhooks/${doomed.id}`)).status).toBe(404);
  }, 240_000);
});
