import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Type from 'typebox';
import { CodedError, createChecker, kvBuckets, streams, subjects } from '@svc/protocol';
import { createGracefulShutdown, createLogger } from '@svc/service-kit';
import { launchNatsServer as startNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { connectBus, type NatsConnection } from './connection.js';
import { publishJson, requestJson, serveRpc, subscribeJson, type MessageContext } from './messaging.js';
import { ensureStreams, ensureStreamsWhenReachable } from './streams.js';
import { createDurablePublisher } from './durable-publisher.js';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';

const logger = createLogger({ name: 'bus-test', level: 'silent' });

describe('bus — against a real nats-server', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer({ authorization: natsAuthorization() });
    nc = await connectBus({ servers: server.url, name: 'bus-test', logger, credentials: server.credentials.operator });
  });

  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('streams — declaring twice is harmless and yields the designed streams and bucket', async () => {
    await ensureStreams(nc);
    await ensureStreams(nc);
    await Promise.all([ensureStreams(nc), ensureStreams(nc)]);
    const jsm = await jetstreamManager(nc);
    const incoming = await jsm.streams.info(streams.incomingEvents.name);
    expect(incoming.config.subjects).toEqual([subjects.incomingAll]);
    expect(incoming.config.retention).toBe('workqueue');
    const stored = await jsm.streams.info(streams.storedEvents.name);
    expect(stored.config.max_bytes).toBe(streams.storedEvents.maxBytes);
    const kv = await new Kvm(nc).open(kvBuckets.workers);
    await kv.put('w1', 'x');
    expect((await kv.get('w1'))?.string()).toBe('x');
  });

  it('streams — SVC_JETSTREAM_REPLICAS above 1 on a single server (not a cluster) is kept at 1: the server has no other to copy to', async () => {
    expect(await ensureStreams(nc, { replicas: 3 })).toEqual({ replicas: 1 });
    const jsm = await jetstreamManager(nc);
    for (const name of [streams.incomingEvents.name, `KV_${kvBuckets.workers}`]) expect((await jsm.streams.info(name)).config.num_replicas).toBe(1);
    // A service at start says so, rather than let the setting promise copies that are not there.
    const lines: string[] = [];
    const logger = createLogger({ name: 'test', level: 'warn', destination: { write: (line: string) => void lines.push(line) } });
    await ensureStreamsWhenReachable(nc, logger, { replicas: 3 });
    expect(lines.map((line) => JSON.parse(line) as { msg: string; asked: number; replicas: number })).toEqual([
      expect.objectContaining({ asked: 3, replicas: 1, msg: expect.stringMatching(/NATS is a single server: each is kept once/) as unknown }),
    ]);
  });

  it('durable publish — a repeated message id is acknowledged as a duplicate and stored once', async () => {
    await ensureStreams(nc);
    const publisher = createDurablePublisher(nc);
    const subject = subjects.incomingEvent(1, 'wrk_dup');
    const first = await publisher.publish(subject, { n: 1 }, { messageId: 'wrk_dup:u1', requestId: 'req-1' });
    const again = await publisher.publish(subject, { n: 1 }, { messageId: 'wrk_dup:u1' });
    publisher.close();
    expect(first.duplicate).toBe(false);
    expect(again.duplicate).toBe(true);
    expect(again.seq).toBe(first.seq);
  });

  it('durable publisher — acks in order with stream sequence, repeats marked, headers carried', async () => {
    await ensureStreams(nc);
    const publisher = createDurablePublisher(nc);
    const subject = subjects.incomingEvent(2, 'wrk_pub');
    const acks = await Promise.all(Array.from({ length: 200 }, (_, n) => publisher.publish(subject, { n }, { messageId: `wrk_pub:${n}`, requestId: 'req-p' })));
    expect(acks.map((a) => a.seq - acks[0]!.seq)).toEqual(Array.from({ length: 200 }, (_, n) => n));
    expect(acks.every((a) => a.stream === streams.incomingEvents.name && !a.duplicate)).toBe(true);
    const again = await publisher.publish(subject, { n: 0 }, { messageId: 'wrk_pub:0' });
    expect(again).toEqual({ stream: streams.incomingEvents.name, seq: acks[0]!.seq, duplicate: true });
    const stored = await (await jetstreamManager(nc)).streams.getMessage(streams.incomingEvents.name, { seq: acks[7]!.seq });
    expect(stored?.json()).toEqual({ n: 7 });
    expect(stored?.header.get('X-Request-Id')).toBe('req-p');
    expect(stored?.header.get('Nats-Msg-Id')).toBe('wrk_pub:7');
    publisher.close();
  });

  it('durable publisher — no stream is unavailable, no ack in time is timeout, closing fails what waits', async () => {
    const publisher = createDurablePublisher(nc, { timeoutMs: 300 });
    await expect(publisher.publish('svc.test.nostream', {}, { messageId: 'x' })).rejects.toMatchObject({ code: 'unavailable' });
    // A plain subscriber is interest but never acks.
    const silent = nc.subscribe('svc.test.silent-stream', { callback: () => {} });
    await expect(publisher.publish('svc.test.silent-stream', {}, { messageId: 'y' })).rejects.toMatchObject({ code: 'timeout' });
    const waiting = publisher.publish('svc.test.silent-stream', {}, { messageId: 'z' });
    publisher.close();
    await expect(waiting).rejects.toMatchObject({ code: 'unavailable' });
    silent.unsubscribe();
  });

  it('request/reply — the result comes back typed and the request id travels in a header', async () => {
    const seen: MessageContext[] = [];
    const sub = serveRpc<{ a: number; b: number }, { sum: number }>(
      nc,
      'svc.rpc.test.add',
      (request, context) => {
        seen.push(context);
        return { sum: request.a + request.b };
      },
      { logger, queue: 'test' },
    );
    const result = await requestJson<{ sum: number }>(nc, 'svc.rpc.test.add', { a: 2, b: 3 }, { requestId: 'req-42' });
    expect(result).toEqual({ sum: 5 });
    expect(seen[0]).toMatchObject({ subject: 'svc.rpc.test.add', requestId: 'req-42' });
    sub.unsubscribe();
  });

  it('request/reply — a task the handler leaves for after the reply runs (what it publishes is sent); one that throws is logged and serving goes on', async () => {
    let published = 0;
    const heard = nc.subscribe('svc.test.after-reply', { callback: () => void (published += 1) });
    const sub = serveRpc<{ fail: boolean }, string>(
      nc,
      'svc.rpc.test.after',
      (request, context) => {
        context.afterReply(() => {
          if (request.fail) throw new Error('the task failed');
          nc.publish('svc.test.after-reply');
        });
        return 'answered';
      },
      { logger },
    );
    await expect(requestJson(nc, 'svc.rpc.test.after', { fail: true })).resolves.toBe('answered');
    await expect(requestJson(nc, 'svc.rpc.test.after', { fail: false })).resolves.toBe('answered');
    await nc.flush();
    expect(published).toBe(1);
    sub.unsubscribe();
    heard.unsubscribe();
  });

  it('request/reply — a coded error crosses the bus with its code, an unexpected one becomes internal', async () => {
    const sub = serveRpc(
      nc,
      'svc.rpc.test.fail',
      (request: { kind: string }) => {
        if (request.kind === 'coded') throw new CodedError('worker_not_found', 'worker wrk_9 does not exist');
        throw new Error('database password is hunter2');
      },
      { logger },
    );
    await expect(requestJson(nc, 'svc.rpc.test.fail', { kind: 'coded' })).rejects.toMatchObject({
      code: 'worker_not_found',
      message: 'worker wrk_9 does not exist',
    });
    const internal = requestJson(nc, 'svc.rpc.test.fail', { kind: 'other' });
    await expect(internal).rejects.toMatchObject({ code: 'internal', message: 'internal error' });
    sub.unsubscribe();
  });

  it('request/reply — an invalid request is answered invalid_request naming the field', async () => {
    const checker = createChecker<{ worker_id: string }>(Type.Object({ worker_id: Type.String({ minLength: 1 }) }));
    const sub = serveRpc(nc, 'svc.rpc.test.checked', (request: { worker_id: string }) => request.worker_id, { logger, checker });
    await expect(requestJson(nc, 'svc.rpc.test.checked', { worker_id: 5 })).rejects.toMatchObject({
      code: 'invalid_request',
      message: '/worker_id must be string',
    });
    expect(await requestJson(nc, 'svc.rpc.test.checked', { worker_id: 'w' })).toBe('w');
    sub.unsubscribe();
  });

  it('request/reply — nobody listening is unavailable; a slow service is timeout', async () => {
    await expect(requestJson(nc, 'svc.rpc.test.nobody', {})).rejects.toMatchObject({ code: 'unavailable' });
    const sub = nc.subscribe('svc.rpc.test.silent', { callback: () => {} });
    await expect(requestJson(nc, 'svc.rpc.test.silent', {}, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'timeout' });
    sub.unsubscribe();
  });

  it('request/reply — a query with retries is sent again after a replica that never answers, and the next one answers', async () => {
    let asked = 0;
    // The first request vanishes, as into a replica killed while holding it.
    const sub = nc.subscribe('svc.rpc.test.flaky', {
      callback: (_err, msg) => (++asked === 1 ? undefined : void msg.respond(JSON.stringify({ ok: true, result: asked }))),
    });
    expect(await requestJson(nc, 'svc.rpc.test.flaky', {}, { timeoutMs: 200, retries: 1 })).toBe(2);
    asked = 0;
    await expect(requestJson(nc, 'svc.rpc.test.flaky', {}, { timeoutMs: 200 })).rejects.toMatchObject({ code: 'timeout' });
    sub.unsubscribe();
    // Retries used up: still a clear error.
    await expect(requestJson(nc, 'svc.rpc.test.nobody', {}, { retries: 2 })).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('request/reply — requests with different timeouts each end at their own deadline; a late answer is dropped; closing the connection fails what waits', async () => {
    // Answers each request after the delay it names.
    const slow = nc.subscribe('svc.rpc.test.delay', {
      callback: (_err, msg) => {
        const { ms } = msg.json<{ ms: number }>();
        setTimeout(() => msg.respond(JSON.stringify({ ok: true, result: ms })), ms);
      },
    });
    const started = Date.now();
    const long = requestJson(nc, 'svc.rpc.test.delay', { ms: 400 }, { timeoutMs: 1000 });
    const short = requestJson(nc, 'svc.rpc.test.delay', { ms: 400 }, { timeoutMs: 150 });
    await expect(short).rejects.toMatchObject({ code: 'timeout', message: 'no answer on svc.rpc.test.delay in time' });
    expect(Date.now() - started).toBeLessThan(390);
    // The short one's answer comes too late and is dropped; the long one's is its own.
    await expect(long).resolves.toBe(400);
    slow.unsubscribe();

    const server2 = await startNatsServer({ authorization: natsAuthorization() });
    const other = await connectBus({ servers: server2.url, name: 'closing', logger, credentials: server2.credentials.operator });
    other.subscribe('svc.rpc.test.never', { callback: () => {} });
    const waiting = requestJson(other, 'svc.rpc.test.never', {}, { timeoutMs: 5000 });
    await other.flush();
    await other.close();
    await expect(waiting).rejects.toMatchObject({ code: 'bus_unavailable' });
    await server2.stop();
  });

  it('publish/subscribe — payload and request id arrive; a failing handler does not end the subscription', async () => {
    const received: Array<[unknown, string | undefined]> = [];
    let bothHandled = () => {};
    const handled = new Promise<void>((resolve) => (bothHandled = resolve));
    const sub = subscribeJson<{ n: number }>(
      nc,
      'svc.test.topic',
      (payload, context) => {
        received.push([payload, context.requestId]);
        if (received.length === 2) bothHandled();
        if (payload.n === 1) throw new Error('first one fails');
      },
      { logger },
    );
    publishJson(nc, 'svc.test.topic', { n: 1 }, { requestId: 'r1' });
    publishJson(nc, 'svc.test.topic', { n: 2 });
    await handled;
    expect(received).toEqual([
      [{ n: 1 }, 'r1'],
      [{ n: 2 }, undefined],
    ]);
    sub.unsubscribe();
  });
});

describe('bus — connection life', () => {
  it('reconnects by itself after the server restarts on the same port', async () => {
    const first = await startNatsServer({ authorization: natsAuthorization() });
    const nc = await connectBus({ servers: first.url, name: 'reconnect-test', logger, credentials: first.credentials.operator });
    await first.stop();
    const second = await startNatsServer({ port: first.port, authorization: natsAuthorization(first.credentials) });
    const reconnected = (async () => {
      for await (const status of nc.status()) if (status.type === 'reconnect') return true;
      return false;
    })();
    expect(await reconnected).toBe(true);
    await nc.request('$JS.API.INFO', undefined, { timeout: 2000 });
    await nc.close();
    await second.stop();
  });

  it('graceful shutdown drains the NATS connection', async () => {
    const server = await startNatsServer({ authorization: natsAuthorization() });
    const nc = await connectBus({ servers: server.url, name: 'shutdown-test', logger, credentials: server.credentials.operator });
    const exits: number[] = [];
    const shutdown = createGracefulShutdown({ logger, exit: (code) => exits.push(code) });
    shutdown.add({ name: 'nats', close: () => nc.drain() });
    await shutdown.shutdown('SIGTERM');
    expect(nc.isClosed()).toBe(true);
    expect(exits).toEqual([0]);
    await server.stop();
  });

  it('a server that never comes up fails the first connection with a clear message', async () => {
    await expect(connectBus({ servers: 'nats://127.0.0.1:1', name: 'x', logger, connectTimeoutMs: 300 })).rejects.toThrow(
      /cannot connect to NATS at nats:\/\/127\.0\.0\.1:1/,
    );
  });
});
