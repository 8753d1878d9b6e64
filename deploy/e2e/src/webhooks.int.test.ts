import type { Server } from 'node:http';
import { Webhook as Verifier } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDecisionLink } from '@svc/auth';
import { WEBHOOK_ACK_WAIT_MS } from '@svc/bus';
import {
  activityData,
  apiPaths,
  WEBHOOK_ATTEMPT_INTERRUPTED,
  type AuditRecord,
  type CreatedWebhook,
  type ListResponseOf,
  type StoredEvent,
  type Webhook,
  type WebhookAttempt,
  type WebhookPayload,
  type WorkerActivity,
} from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { controlClient } from './sidecar-process.js';
import { startStack, type E2eStack } from './stack.js';
import { bashRequest, postAsWorker } from './worker-events.js';
import { startReceiver } from './webhook-receiver.js';

/** How this stack retries a delivery: the pause after the first failed try, doubling up to the longest. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 2_000;
/** How long the flaky receiver answers 500 from its first try on: several tries of each notification fail. */
const OUTAGE_MS = 8_000;
/** How far into the outage control is killed: tries fail before it dies and after it is back. */
const CONTROL_KILLED_AT_MS = 3_000;
/**
 * The retry window of this stack: a receiver failing this long is disabled. Longer than the
 * outage and the longest pause after it (with room for a loaded machine), so the flaky receiver
 * is never disabled.
 */
const WINDOW_S = 15;
/** How long a notification answered 200 is watched for a stray repeat: longer than the longest pause between tries. */
const REPEAT_WATCH_MS = RETRY_MAX_MS + 1_000;

describe('webhooks: signed, durable, retried, disabled when the receiver never answers (every service its own process)', () => {
  let stack: E2eStack;
  const servers: Server[] = [];
  beforeAll(async () => {
    stack = await startStack({
      env: {
        SVC_WEBHOOK_RETRY_FIRST_MS: String(RETRY_FIRST_MS),
        SVC_WEBHOOK_RETRY_MAX_MS: String(RETRY_MAX_MS),
        SVC_WEBHOOK_RETRY_WINDOW_S: String(WINDOW_S),
      },
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

  it('a receiver down for a while (and control killed meanwhile) gets every notification once per id, signed; one that never answers is disabled, and says why', async () => {
    const token = await stack.userToken('hook-user');
    let outageFrom: number | undefined;
    const flaky = await startReceiver(() => {
      outageFrom ??= Date.now();
      return Date.now() - outageFrom < OUTAGE_MS ? 500 : 200;
    });
    const dead = await startReceiver(() => 500);
    servers.push(flaky.server, dead.server);

    // Refusals first: scope "all" is for admins; a bad URL names the field.
    const notAdmin = await api(token, 'POST', '/v1/webhooks', { url: flaky.url, kinds: ['worker.ended'], scope: 'all' });
    expect(notAdmin).toMatchObject({ status: 403, body: { code: 'forbidden' } });
    const badUrl = await api(token, 'POST', '/v1/webhooks', { url: 'ftp://example.com', kinds: ['worker.ended'] });
    expect(badUrl.status).toBe(400);
    expect(JSON.stringify(badUrl.body)).toContain('url');
    // Loopback is allowed in this stack (SVC_WEBHOOK_ALLOWED_CIDRS), the control plane's own ports never.
    const natsPort = new URL(stack.env['SVC_NATS_URL']!).port;
    const atNats = await api(token, 'POST', '/v1/webhooks', { url: `http://127.0.0.1:${natsPort}/`, kinds: ['worker.ended'] });
    expect(atNats).toMatchObject({ status: 400, body: { code: 'invalid_request' } });
    expect(JSON.stringify(atNats.body)).toContain(`port ${natsPort} of 127.0.0.1 is a control-plane endpoint (NATS)`);

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
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, CONTROL_KILLED_AT_MS - (Date.now() - outageFrom!))));
    expect(Date.now() - outageFrom!, 'control is killed during the outage').toBeLessThan(OUTAGE_MS);
    const restartControl = await stack.killService('control');
    restartControl();

    await waitFor('each notification answered 200', () => new Set(flaky.received.filter((r) => r.answered === 200).map((r) => r.id)).size === 3, 90_000);
    const delivered = flaky.received.filter((r) => r.answered === 200);
    // Once per id: nothing answered 200 is sent again.
    await new Promise((resolve) => setTimeout(resolve, REPEAT_WATCH_MS));
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
    // Every try is listed: the failures with the receiver's status (never its body), then the
    // delivery; a try in flight when control was killed as interrupted (it may or may not have
    // reached the receiver).
    const attempts = ((await api(token, 'GET', `/v1/webhooks/${subscription.id}/attempts`)).body as ListResponseOf<WebhookAttempt>).items;
    const interrupted = attempts.filter((a) => a.error === WEBHOOK_ATTEMPT_INTERRUPTED);
    const answered = attempts.filter((a) => a.error !== WEBHOOK_ATTEMPT_INTERRUPTED);
    expect(attempts.filter((a) => a.delivered)).toHaveLength(3);
    expect(answered.filter((a) => !a.delivered).every((a) => a.status === 500 && a.error === null)).toBe(true);
    expect(JSON.stringify(attempts)).not.toContain('receiver down');
    expect(interrupted.every((a) => a.status === null && !a.delivered)).toBe(true);
    expect(interrupted.length).toBeLessThanOrEqual(3);
    expect(answered.length).toBeLessThanOrEqual(flaky.received.length);
    expect(flaky.received.length).toBeLessThanOrEqual(attempts.length);

    // The receiver that never answers is disabled once the window is over, with the reason.
    await waitFor(
      'the dead receiver disabled',
      async () => ((await api(token, 'GET', '/v1/webhooks')).body as ListResponseOf<Webhook>).items.find((w) => w.id === doomed.id)?.disabled_at != null,
      // (A try cut short by the kill comes back only after the ack wait.)
      WINDOW_S * 1000 + WEBHOOK_ACK_WAIT_MS + 10_000,
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

  it("worker.idle: a conversation's agent that ends its turn is told once per idle spell, with its console page; an exit a message resumes is no worker.ended", async () => {
    const token = await stack.userToken('idle-user');
    const receiver = await startReceiver(() => 200);
    servers.push(receiver.server);
    expect((await api(token, 'POST', '/v1/webhooks', { url: receiver.url, kinds: ['worker.idle', 'worker.ended'] })).status).toBe(201);
    const worker = await stack.createWorker('idle-user');
    const activity = (uid: string, state: WorkerActivity) => ({ type: 'system' as const, uid, data: activityData(state, 'a test') });
    const exit = (uid: string, details: Record<string, unknown>) => ({
      type: 'system' as const,
      uid,
      data: { level: 'info' as const, subtype: 'agent_exit', message: 'the agent exited', details },
    });
    expect(
      await postAsWorker(stack.gatewayUrl, worker, [
        activity('a-1', 'working'),
        activity('a-2', 'idle'),
        exit('x-1', { code: 0, resumable: true, reason: 'idle for 2 s' }),
        activity('a-3', 'suspended'),
        activity('a-4', 'working'),
        activity('a-5', 'idle'),
        exit('x-2', { code: 0 }),
      ]),
    ).toBe(202);
    const payloads = () => receiver.received.map((r) => JSON.parse(r.body) as WebhookPayload);
    await waitFor('two idle spells and the end told', () => payloads().length >= 3, 20_000);
    await new Promise((resolve) => setTimeout(resolve, REPEAT_WATCH_MS));
    expect(
      payloads()
        .map((p) => p.type)
        .sort(),
    ).toEqual(['worker.ended', 'worker.idle', 'worker.idle']);
    expect(payloads().find((p) => p.type === 'worker.idle')!.data).toEqual({
      worker_id: worker.worker_id,
      owner: 'idle-user',
      worker_url: `${stack.gatewayUrl}/workers/${worker.worker_id}`,
    });
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(3);
  });

  it('a "needs a decision" link: GET shows what it decides and decides nothing; the POST decides once, as the subscriber, through the link channel; a second use, a tampered and an expired link are refused', async () => {
    const token = await stack.userToken('link-user');
    const receiver = await startReceiver(() => 200);
    servers.push(receiver.server);
    expect((await api(token, 'POST', '/v1/webhooks', { url: receiver.url, kinds: ['request.needs_decision'], format: 'standard' })).status).toBe(201);
    const worker = await stack.createWorker('link-user');
    expect(await postAsWorker(stack.gatewayUrl, worker, [bashRequest('r2', 'npm publish')])).toBe(202);
    await waitFor('the notification', () => receiver.received.length === 1, 20_000);
    const { links } = (JSON.parse(receiver.received[0]!.body) as WebhookPayload).data;
    expect(links).toMatchObject({ console: `${stack.gatewayUrl}/workers/${worker.worker_id}` });
    expect(links!.allow).toMatch(new RegExp(`^${stack.gatewayUrl}/v1/links\\?token=`));
    expect(Date.parse(links!.expires_at)).toBeGreaterThan(Date.now());
    const control = controlClient(stack.gatewayUrl, token);
    const open = async () => (await control.openRequests(worker.worker_id)).length;
    const follow = async (url: string, method: 'GET' | 'POST') => {
      const response = await fetch(url, {
        method,
        ...(method === 'POST' ? { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' } : {}),
      });
      return { status: response.status, html: await response.text(), type: response.headers.get('content-type') };
    };

    // A bare GET (a link previewer's) shows the confirmation only.
    const confirm = await follow(links!.allow, 'GET');
    expect(confirm.status, confirm.html).toBe(200);
    expect(confirm.type).toMatch(/^text\/html/);
    expect(confirm.html).toContain('Allow Bash?');
    expect(confirm.html).toContain('npm publish');
    expect(confirm.html).toContain('Nothing is decided until you confirm');
    expect(confirm.html).toContain('<form method="post">');
    await follow(links!.deny, 'GET');
    expect(await open()).toBe(1);

    // Tampered (a character inside its signature changed: the last one carries padding bits) and expired links decide nothing.
    const at = links!.allow.length - 10;
    const tampered = links!.allow.slice(0, at) + (links!.allow[at] === 'A' ? 'B' : 'A') + links!.allow.slice(at + 1);
    for (const method of ['GET', 'POST'] as const) {
      const refused = await follow(tampered, method);
      expect(refused.status).toBe(401);
      expect(refused.html).toContain('this decision link is not valid');
    }
    const expiredToken = await signDecisionLink(
      stack.env['SVC_DECISION_LINK_KEY']!,
      { workerId: worker.worker_id, requestId: 'r2', decision: 'allow', decidedBy: 'link-user' },
      new Date(Date.now() - 1000),
    );
    const expired = await follow(`${stack.gatewayUrl}${apiPaths.decisionLink(expiredToken)}`, 'POST');
    expect(expired.status).toBe(410);
    expect(expired.html).toContain('this decision link has expired');
    expect(await open()).toBe(1);

    // The POST decides, once, as the subscriber.
    const decided = await follow(links!.allow, 'POST');
    expect(decided.status).toBe(200);
    expect(decided.html).toContain('Allowed');
    expect(await open()).toBe(0);
    for (const again of [links!.allow, links!.deny]) {
      const refused = await follow(again, 'POST');
      expect(refused.status).toBe(409);
      expect(refused.html).toContain('already decided');
    }
    const decisions = (await control.events(worker.worker_id)).filter((event) => event.type === 'control_response') as Array<StoredEvent<'control_response'>>;
    expect(decisions.map((event) => [event.data.decision, event.data.decided_by])).toEqual([['allow', 'link-user']]);
    // The audit trail says it was decided through a link.
    const admin = await stack.userToken('auditor', { svc_admin: true });
    await waitFor(
      'the decision in the audit trail',
      async () => ((await api(admin, 'GET', '/v1/audit?channel=link')).body as ListResponseOf<AuditRecord>).items.some((r) => r.request_id === 'r2'),
      10_000,
    );
    const records = ((await api(admin, 'GET', '/v1/audit?channel=link')).body as ListResponseOf<AuditRecord>).items.filter((r) => r.request_id === 'r2');
    expect(records).toEqual([expect.objectContaining({ actor: 'link-user', channel: 'link', action: 'decision', decision: 'allow' })]);
  }, 60_000);
});
