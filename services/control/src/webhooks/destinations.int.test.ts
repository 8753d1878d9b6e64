import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDurablePublisher, ensureStreams, requestJson } from '@svc/bus';
import { CodedError, subjects, type CreatedWebhook, type CreateWebhookRpcType, type ListResponseOf, type Webhook, type WebhookDelivery } from '@svc/protocol';
import type { HostLookup } from '@svc/service-kit';
import { migrateToLatest, openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, waitFor, type BusFixture } from '@svc/test-support';
import { deliverNotifications } from './deliveries.js';
import { createWebhookDestinations } from './destinations.js';
import { messageIdOf } from './notifications.js';
import { serveWebhookRpcs } from './subscriptions.js';
import { createWebhookStore } from './webhook-store.js';

interface Received {
  host: string | undefined;
  body: string;
}

/** A receiver on loopback: answers `status()`, with a body that must never be recorded. */
async function startReceiver(status: () => number): Promise<{ port: number; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push({ host: request.headers.host, body });
      response.writeHead(status()).end('root:x:0:0:root:/root:/bin/bash');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, received, server };
}

/** A resolver whose answers a test changes: the real check code runs, only the DNS is staged. */
function stagedLookup(table: Record<string, string[]>): HostLookup {
  return async (name) => {
    const addresses = table[name];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
    return addresses;
  };
}

describe('webhooks — they reach only the outside', () => {
  let bus: BusFixture;
  let database: StoreDatabase;
  const servers: Server[] = [];
  beforeAll(async () => {
    bus = await startBusFixture();
    database = await openDatabase({});
    await migrateToLatest(database.db, 'control');
    await ensureStreams(bus.nc);
  });
  afterAll(async () => {
    for (const server of servers) server.close();
    await database?.close();
    await bus?.stop();
  });

  /** The control service's webhook parts with `destinations`, until `stop`. */
  async function startWebhooks(destinations: Awaited<ReturnType<typeof createWebhookDestinations>>, retryFirstMs: number) {
    const webhooks = createWebhookStore(database.db);
    const rpcs = serveWebhookRpcs({ nc: bus.nc, webhooks, destinations, logger: bus.logger, queue: 'control' });
    const deliveries = await deliverNotifications({
      nc: bus.nc,
      webhooks,
      destinations,
      retry: { firstMs: retryFirstMs, maxMs: retryFirstMs, windowMs: 600_000 },
      logger: bus.logger,
    });
    const publisher = createDurablePublisher(bus.nc);
    await bus.nc.flush();
    return {
      webhooks,
      create: (owner: string, url: string) =>
        requestJson<CreatedWebhook>(bus.nc, subjects.rpc.createWebhook, { owner, request: { url, kinds: ['worker.ended'] } } satisfies CreateWebhookRpcType),
      /** Queues one notification for `webhook`, as the fan-out does. */
      async notify(webhook: Webhook, factId: string) {
        const delivery: WebhookDelivery = {
          webhook_id: webhook.id,
          message_id: messageIdOf(factId, webhook.id),
          fact: { id: factId, kind: 'worker.ended', at: new Date().toISOString(), data: { worker_id: 'wrk_hooks', owner: webhook.owner, exit_code: 0 } },
        };
        await publisher.publish(subjects.webhookDelivery(webhook.id), delivery, { messageId: delivery.message_id });
      },
      async stop() {
        for (const rpc of rpcs) rpc.unsubscribe();
        await deliveries.stop();
        publisher.close();
      },
    };
  }

  it('webhooks — 127.0.0.1, a name resolving to loopback (localhost) and NATS itself are refused at creation, saying which address and why; nothing is stored', async () => {
    // The system resolver, as in production; no range allowed.
    const parts = await startWebhooks(
      await createWebhookDestinations({ webhookAllowedCidrs: [], natsUrl: bus.url, databaseUrl: undefined, publicUrl: undefined }),
      60_000,
    );
    try {
      const refusal = async (url: string) => {
        const error = await parts.create('alice', url).then(
          () => undefined,
          (err: unknown) => err,
        );
        expect(error, url).toBeInstanceOf(CodedError);
        expect((error as CodedError).code).toBe('invalid_request');
        return (error as CodedError).message;
      };
      // The host alone is named: a URL's path may be its secret.
      expect(await refusal('http://127.0.0.1:8080/services/T0/B0/s3cr3t')).toBe(
        'webhooks reach only the outside; 127.0.0.1:8080 is refused: 127.0.0.1 is a loopback address; an operator may allow a range for in-cluster receivers (SVC_WEBHOOK_ALLOWED_CIDRS)',
      );
      expect(await refusal('http://0x7f.1:8080/hook')).toContain('127.0.0.1 is a loopback address');
      expect(await refusal('http://localhost:8080/hook')).toMatch(/: localhost resolves to (127\.0\.0\.1|::1), a loopback address; an operator may allow/);
      const natsPort = new URL(bus.url).port;
      expect(await refusal(`http://127.0.0.1:${natsPort}/`)).toBe(
        `webhooks reach only the outside; 127.0.0.1:${natsPort} is refused: port ${natsPort} of 127.0.0.1 is a control-plane endpoint (NATS)`,
      );
      const listed = await requestJson<ListResponseOf<Webhook>>(bus.nc, subjects.rpc.listWebhooks, { owner: 'alice' });
      expect(listed.items).toEqual([]);
    } finally {
      await parts.stop();
    }
  });

  it('webhooks — a name that resolves outside at creation and to loopback at delivery is not sent to; the attempt says why', async () => {
    const receiver = await startReceiver(() => 200);
    servers.push(receiver.server);
    const dns: Record<string, string[]> = { 'rebind.example': ['93.184.215.14'] };
    const destinations = await createWebhookDestinations(
      { webhookAllowedCidrs: [], natsUrl: bus.url, databaseUrl: undefined, publicUrl: undefined },
      stagedLookup(dns),
    );
    // One try in this test: the next would come a minute later.
    const parts = await startWebhooks(destinations, 60_000);
    try {
      const created = await parts.create('bob', `http://rebind.example:${receiver.port}/hook`);
      // The name now answers with loopback, where the receiver listens.
      dns['rebind.example'] = ['127.0.0.1'];
      await parts.notify(created, 'worker.ended:wrk_hooks:rebind');
      const attempts = await waitFor(
        'the refused try recorded',
        async () => {
          const listed = await parts.webhooks.attempts(created.id);
          return listed.length === 1 && listed[0]!.error !== null && !listed[0]!.error.startsWith('interrupted') ? listed : undefined;
        },
        10_000,
      );
      expect(attempts.map(({ attempt, status, error, delivered }) => ({ attempt, status, error, delivered }))).toEqual([
        { attempt: 1, status: null, error: 'not sent: rebind.example resolves to 127.0.0.1, a loopback address', delivered: false },
      ]);
      expect(receiver.received).toEqual([]);
      await parts.webhooks.delete(created.id);
    } finally {
      await parts.stop();
    }
  });

  it('webhooks — in an allowed range, a try connects to the checked address with the name as Host; attempts keep the status, never the body', async () => {
    let answer = 500;
    const receiver = await startReceiver(() => answer);
    servers.push(receiver.server);
    // `.test` names resolve nowhere: the POST arrives only through the checked address.
    const dns = { 'receiver.test': ['127.0.0.1'], 'closed.test': ['127.0.0.1'] };
    const destinations = await createWebhookDestinations(
      { webhookAllowedCidrs: ['127.0.0.0/8'], natsUrl: bus.url, databaseUrl: undefined, publicUrl: undefined },
      stagedLookup(dns),
    );
    const parts = await startWebhooks(destinations, 50);
    const closed = await startReceiver(() => 200);
    await new Promise((resolve) => closed.server.close(resolve));
    try {
      const created = await parts.create('carol', `http://receiver.test:${receiver.port}/hook`);
      await parts.notify(created, 'worker.ended:wrk_hooks:allowed');
      await waitFor('the first try answered 500', () => receiver.received.length >= 1, 10_000);
      answer = 200;
      await waitFor('delivered', async () => (await parts.webhooks.attempts(created.id)).some((attempt) => attempt.delivered), 10_000);
      expect(receiver.received[0]!.host).toBe(`receiver.test:${receiver.port}`);
      expect(JSON.parse(receiver.received[0]!.body)).toMatchObject({ type: 'worker.ended', data: { worker_id: 'wrk_hooks', exit_code: 0 } });
      const attempts = await parts.webhooks.attempts(created.id);
      expect(attempts.map(({ status, error, delivered }) => ({ status, error, delivered }))).toEqual([
        ...attempts.slice(0, -1).map(() => ({ status: 500, error: null, delivered: false })),
        { status: 200, error: null, delivered: true },
      ]);
      expect(JSON.stringify(attempts)).not.toContain('root:x');

      // Nobody listens: the try says so (the connection's error, not a body).
      const unanswered = await parts.create('carol', `http://closed.test:${closed.port}/hook`);
      await parts.notify(unanswered, 'worker.ended:wrk_hooks:closed');
      const failed = await waitFor(
        'the unanswered try recorded',
        async () => (await parts.webhooks.attempts(unanswered.id)).find((attempt) => attempt.error?.includes('ECONNREFUSED')),
        10_000,
      );
      expect(failed).toMatchObject({ status: null, delivered: false, error: `connect ECONNREFUSED 127.0.0.1:${closed.port}` });
      await parts.webhooks.delete(created.id);
      await parts.webhooks.delete(unanswered.id);
    } finally {
      await parts.stop();
    }
  });
});
