import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kvBuckets, objectBuckets, streams, subjects, type AuditHead } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { connectBus, type NatsConnection } from './connection.js';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  NATS_PERMISSIONS,
  NATS_REQUESTS,
  NATS_SERVICE_USERS,
  natsAuthorization,
  natsAuthorizationConfig,
  readNatsCredentialsDir,
  type NatsCredentials,
  type NatsServiceUser,
} from './nats-auth.js';
import { requestJson, serveRpc } from './messaging.js';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { ensureStreams } from './streams.js';
import { publishAuditHead, readAuditHeads } from './audit-heads.js';
import { openBucket } from './kv-buckets.js';
import { openMessageImages } from './message-images.js';
import { openWorkspaceChanges } from './workspace-changes.js';

const logger = createLogger({ name: 'nats-auth-test', level: 'silent' });

/**
 * Waits until everything `publishers` sent has reached `observer`, or was refused: once a
 * publisher's flush is answered the server has routed what it sent before, and once the
 * observer's is, the observer has read what the server routed to it before that.
 */
async function allRouted(observer: NatsConnection, ...publishers: NatsConnection[]): Promise<void> {
  await Promise.all(publishers.map((publisher) => publisher.flush().catch(() => {})));
  await observer.flush();
}

/** Polls `condition` until it holds or `timeoutMs` passes (@svc/test-support's `waitFor` builds on this library). */
async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !condition() && Date.now() < deadline;) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Publishes as `nc` and says whether a subscriber with every permission saw it. */
async function delivered(publisher: NatsConnection, observer: NatsConnection, subject: string): Promise<boolean> {
  let seen = false;
  const subscription = observer.subscribe(subject, {
    callback: () => {
      seen = true;
    },
  });
  await observer.flush();
  publisher.publish(subject, 'x');
  await allRouted(observer, publisher);
  subscription.unsubscribe();
  return seen;
}

describe('NATS refuses strangers: every service has its own user and subjects', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let operator: NatsConnection;
  let gateway: NatsConnection;

  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    operator = await connectBus({ servers: server.url, name: 'operator', logger, credentials: server.credentials.operator });
    await ensureStreams(operator);
    gateway = await connectBus({ servers: server.url, name: 'gateway', logger, credentials: server.credentials.gateway });
  });
  afterAll(async () => {
    await Promise.all([operator?.close(), gateway?.close()]);
    await server?.stop();
  });

  it('nats auth — a client without credentials, or with a wrong password, is refused at once', async () => {
    const started = Date.now();
    await expect(connectBus({ servers: server.url, name: 'stranger', logger })).rejects.toThrow(/refused a connection without credentials/);
    await expect(connectBus({ servers: server.url, name: 'guesser', logger, credentials: { user: 'gateway', password: 'guess' } })).rejects.toThrow(
      /refused the credentials of user gateway/,
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('nats auth — the gateway cannot announce a stored event or a decision, write a worker record, purge a worker’s events, or delete a stream or a service’s consumer', async () => {
    const worker = 'wrk_forged';
    expect(await delivered(gateway, operator, subjects.storedEvent(worker))).toBe(false);
    expect(await delivered(gateway, operator, subjects.lifecycleEvent(worker))).toBe(false);
    expect(await delivered(gateway, operator, subjects.controlEvents(worker))).toBe(false);
    expect(await delivered(gateway, operator, subjects.decisionAppend(3))).toBe(false);
    expect(await delivered(gateway, operator, subjects.workerStatus(worker))).toBe(false);
    // Through JetStream too: the publish is refused, not stored.
    await expect(jetstream(gateway).publish(subjects.storedEvent(worker), '{}', { timeout: 2000 })).rejects.toThrow(/permission/i);
    await expect(jetstream(gateway).publish(`$KV.svc_workers.${worker}`, '{}', { timeout: 2000 })).rejects.toThrow(/permission/i);
    await expect(gateway.request(`$JS.API.STREAM.DELETE.SVC_EVENTS_STORED`, '', { timeout: 2000 })).rejects.toThrow(/permission/i);
    await expect(gateway.request(`$JS.API.CONSUMER.DELETE.SVC_EVENTS_INCOMING.ingest-partition-0`, '', { timeout: 2000 })).rejects.toThrow(/permission/i);
    expect(await delivered(gateway, operator, subjects.rpc.purgeEvents)).toBe(false);
    const stored = await jetstream(operator)
      .jetstreamManager()
      .then((manager) => manager.streams.info('SVC_EVENTS_STORED'));
    expect(stored.state.messages).toBe(0);
    // The server reports each refusal (the e2e stack fails a run in which a service met one; its log may lag).
    await until(() => server.permissionViolations().join('\n').includes(subjects.storedEvent(worker)));
    expect(server.permissionViolations().join('\n')).toContain(subjects.storedEvent(worker));
  });

  it('nats auth — what the gateway must do still works: publish an incoming event durably, ask the services', async () => {
    const ack = await jetstream(gateway).publish(subjects.incomingEvent(3, 'wrk_ok'), '{}', { timeout: 2000 });
    expect(ack.stream).toBe('SVC_EVENTS_INCOMING');
    const answered = operator.subscribe(subjects.rpc.getSession, {
      callback: (_err, message) => {
        message.respond('pong');
      },
    });
    await operator.flush();
    expect((await gateway.request(subjects.rpc.getSession, 'ping', { timeout: 2000 })).string()).toBe('pong');
    answered.unsubscribe();
    // A watch of the worker records that resets deletes the consumer it leaves: JetStream answers (here: no such consumer).
    const deleted = await gateway.request(`$JS.API.CONSUMER.DELETE.KV_${kvBuckets.workers}.gone`, '', { timeout: 2000 });
    expect(deleted.json<{ error?: { code: number } }>().error?.code).toBe(404);
  });

  it("nats auth — the event log's owners may announce stored events; the session service may not", async () => {
    const ingest = await connectBus({ servers: server.url, name: 'ingest', logger, credentials: server.credentials['event-ingest'] });
    const session = await connectBus({ servers: server.url, name: 'session', logger, credentials: server.credentials.session });
    try {
      expect(await delivered(ingest, operator, subjects.storedEvent('wrk_real'))).toBe(true);
      expect(await delivered(session, operator, subjects.storedEvent('wrk_real'))).toBe(false);
      expect(await delivered(session, operator, subjects.workerStatus('wrk_real'))).toBe(true);
    } finally {
      await Promise.all([ingest.close(), session.close()]);
    }
  });

  it("nats auth — the session service's user cannot call svc.rpc.control.decide: the server refuses it, and control never hears it", async () => {
    const control = await connectBus({ servers: server.url, name: 'control', logger, credentials: server.credentials.control });
    const session = await connectBus({ servers: server.url, name: 'session', logger, credentials: server.credentials.session });
    try {
      let heard = 0;
      const serving = serveRpc(control, subjects.rpc.decide, () => ++heard, { logger, queue: 'control' });
      await control.flush();
      const decide = { worker_id: 'wrk_victim', decision: { request_id: 'r1', decision: 'allow' }, decided_by: { sub: 'alice' } };
      await expect(requestJson(session, subjects.rpc.decide, decide, { timeoutMs: 1000 })).rejects.toMatchObject({ code: 'timeout' });
      expect(heard).toBe(0);
      expect(server.permissionViolations().join('\n')).toMatch(/user:session" - Publish Violation - Subject "svc\.rpc\.control\.decide"/);
      // The gateway's user may: the same request is heard and answered.
      expect(await requestJson(gateway, subjects.rpc.decide, decide, { timeoutMs: 2000 })).toBe(1);
      serving.unsubscribe();
    } finally {
      await Promise.all([control.close(), session.close()]);
    }
  });

  it('nats auth — each service may send requests on the subjects it calls (docs/nats-security.md), and on no other', async () => {
    // Every request subject of every service, a wildcard made concrete.
    const requests = [...new Set(NATS_SERVICE_USERS.flatMap((user) => [...NATS_REQUESTS[user].serves, ...NATS_REQUESTS[user].calls]))];
    const concrete = (subject: string) => subject.replace(/\*$/, '0');
    const heard = new Set<string>();
    const observer = operator.subscribe('svc.>', { callback: (_err, message) => void heard.add(message.subject) });
    await operator.flush();
    try {
      for (const user of NATS_SERVICE_USERS) {
        const connection = user === 'gateway' ? gateway : await connectBus({ servers: server.url, name: user, logger, credentials: server.credentials[user] });
        heard.clear();
        for (const subject of requests) connection.publish(concrete(subject), '{}', { reply: '_INBOX.probe' });
        await allRouted(operator, connection);
        expect([...heard].sort(), user).toEqual(NATS_REQUESTS[user].calls.map(concrete).sort());
        if (connection !== gateway) await connection.close();
      }
    } finally {
      observer.unsubscribe();
    }
  });

  it('nats auth — a service answers a request it received, once; it cannot publish into an inbox otherwise (the session: its log lines only)', async () => {
    const users = ['control', 'session'] as const satisfies readonly NatsServiceUser[];
    const [control, session] = await Promise.all(
      users.map((user) => connectBus({ servers: server.url, name: user, logger, credentials: server.credentials[user] })),
    );
    const replies: string[] = [];
    let firstReply = () => {};
    const replied = new Promise<void>((resolve) => (firstReply = resolve));
    const inbox = operator.subscribe('_INBOX.test.>', {
      callback: (_err, message) => {
        replies.push(`${message.subject} ${message.string()}`);
        firstReply();
      },
    });
    await operator.flush();
    try {
      const answering = control!.subscribe(subjects.rpc.controlRequests, {
        callback: (_err, message) => {
          message.respond('first');
          message.respond('second');
        },
      });
      await control!.flush();
      gateway.publish(subjects.rpc.controlRequests, '{}', { reply: '_INBOX.test.asked' });
      await gateway.flush();
      control!.publish('_INBOX.test.forged', 'a forged answer');
      session!.publish('_INBOX.test.forged', 'a forged answer');
      session!.publish('_INBOX.logs.test', 'a log line');
      // Control has answered (both of its answers sent), and everything sent has been routed or refused.
      await replied;
      await allRouted(operator, control!, session!);
      expect(replies).toEqual(['_INBOX.test.asked first']);
      expect(await delivered(session!, operator, '_INBOX.logs.follow-1')).toBe(true);
      // (The server's log is read as it comes: the line may lag.)
      const forged = /user:control" - Publish Violation - Subject "_INBOX\.test\.forged"/;
      await until(() => forged.test(server.permissionViolations().join('\n')));
      expect(server.permissionViolations().join('\n')).toMatch(forged);
      answering.unsubscribe();
    } finally {
      inbox.unsubscribe();
      await Promise.all([control!.close(), session!.close()]);
    }
  });

  it("nats auth — credentials read from a directory of one file per user (the chart's single mode); a missing one is named", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-nats-credentials-'));
    try {
      for (const user of [...NATS_SERVICE_USERS, 'operator']) await writeFile(path.join(dir, user), `${user}-password\n`);
      const read = await readNatsCredentialsDir(dir);
      expect(read.gateway).toEqual({ user: 'gateway', password: 'gateway-password' });
      expect(read.operator.password).toBe('operator-password');
      await rm(path.join(dir, 'control'));
      await expect(readNatsCredentialsDir(dir)).rejects.toThrow(/password of user control cannot be read from .*control \(ENOENT\)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("nats auth — the server config holds every service's permissions, and the operator has no limits", () => {
    const config = natsAuthorizationConfig(server.credentials);
    const users = (JSON.parse(config.replace(/^authorization: /, '')) as { users: Array<{ user: string; permissions?: unknown }> }).users;
    expect(users.map((u) => u.user).sort()).toEqual(['control', 'event-ingest', 'gateway', 'operator', 'session']);
    expect(users.find((u) => u.user === 'gateway')!.permissions).toEqual(NATS_PERMISSIONS.gateway);
    expect(users.find((u) => u.user === 'operator')!.permissions).toBeUndefined();
  });
});

const head = (seq: number): AuditHead => ({ seq, hash: String(seq % 10).repeat(64), published_at: new Date().toISOString(), instance: 'control-test' });

/** A nats-server of its own, with no stream until a service makes them: its permission violations (it keeps the first 100) are this block's alone. */
describe('NATS: no service may destroy or rewrite a stream, and what the services do with JetStream still works', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let operator: NatsConnection;
  let users: Record<NatsServiceUser, NatsConnection>;

  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    operator = await connectBus({ servers: server.url, name: 'operator', logger, credentials: server.credentials.operator });
    users = Object.fromEntries(
      await Promise.all(
        NATS_SERVICE_USERS.map(
          async (user) => [user, await connectBus({ servers: server.url, name: user, logger, credentials: server.credentials[user] })] as const,
        ),
      ),
    ) as Record<NatsServiceUser, NatsConnection>;
  });
  afterAll(async () => {
    await Promise.all([operator?.close(), ...Object.values(users ?? {}).map((connection) => connection.close())]);
    await server?.stop();
  });

  it('nats auth — what the services do with JetStream works as their own users, with no permission violation: streams declared (made, then updated, the heads left as they are), KV buckets opened, heads published and read', async () => {
    const warnings: string[] = [];
    const watchful = createLogger({ name: 'nats-auth-test', level: 'warn', destination: { write: (line: string) => void warnings.push(line) } });
    // A fresh server: event-ingest makes every stream and bucket, as at a first start.
    await ensureStreams(users['event-ingest'], { logger: watchful });
    const jsm = await jetstreamManager(operator);
    expect((await jsm.streams.info(streams.auditHeads.name)).config).toMatchObject({ deny_delete: true, deny_purge: true });
    // A bucket missing when the gateway needs it: made by the gateway.
    await jsm.streams.delete(`KV_${kvBuckets.modelUsage}`);
    const usage = await openBucket(users.gateway, kvBuckets.modelUsage);
    await usage.put('wrk_1', '{}');
    expect((await usage.get('wrk_1'))?.string()).toBe('{}');
    const workers = await openBucket(users.session, kvBuckets.workers);
    await workers.put('wrk_1', '{}');
    expect((await (await openBucket(users.gateway, kvBuckets.workers)).get('wrk_1'))?.string()).toBe('{}');

    // The message images' store, missing: made by the gateway, which keeps an image (once) and reads it back, a large one through flow control.
    await jsm.streams.delete(`OBJ_${objectBuckets.messageImages}`);
    const images = await openMessageImages(users.gateway, logger);
    const large = { media_type: 'image/png' as const, bytes: new Uint8Array(3 * 1024 * 1024).fill(7) };
    const kept = await images.put('wrk_1', large);
    expect(await images.put('wrk_1', large)).toEqual(kept);
    expect(Buffer.from((await images.get('wrk_1', kept.sha256))!.bytes).equals(Buffer.from(large.bytes))).toBe(true);
    expect(await images.get('wrk_2', kept.sha256)).toBeUndefined();

    // The workspaces' changes, missing: made by the gateway, which keeps a report and its patch (a new one over the last), and reads them back.
    await jsm.streams.delete(`OBJ_${objectBuckets.workspacePatches}`);
    await jsm.streams.delete(`KV_${kvBuckets.workspaceChanges}`);
    const changes = await openWorkspaceChanges(users.gateway, logger);
    const report = {
      worker_id: 'wrk_1',
      repo: 'https://git.example.com/app.git',
      base_commit: 'a'.repeat(40),
      head_commit: 'b'.repeat(40),
      branch: 'svc/ses_1',
      files: [{ path: 'a.txt', status: 'modified' as const, additions: 1, deletions: 0 }],
      files_truncated: false,
      additions: 1,
      deletions: 0,
      patch_bytes: 2 * 1024 * 1024,
      truncated: false,
      reported_at: new Date().toISOString(),
    };
    await changes.put(report, 'x'.repeat(1024 * 1024));
    await changes.put(report, 'y'.repeat(2 * 1024 * 1024));
    await changes.recordPush('wrk_1', { branch: 'svc/ses_1', commit: 'b'.repeat(40), remote: report.repo, by: 'alice', at: report.reported_at });
    expect(await changes.get('wrk_1')).toEqual({ ...report, pushed: expect.objectContaining({ by: 'alice' }) });
    expect(await changes.patch('wrk_1')).toBe('y'.repeat(2 * 1024 * 1024));
    expect(await changes.get('wrk_2')).toBeUndefined();

    // The operator changes the heads' stream: control's start brings the others to svc's settings and leaves it, saying how it differs.
    const { config: heads } = await jsm.streams.info(streams.auditHeads.name);
    await jsm.streams.update(streams.auditHeads.name, { ...heads, duplicate_window: heads.duplicate_window / 2 });
    const { config: webhooks } = await jsm.streams.info(streams.webhooks.name);
    await jsm.streams.update(streams.webhooks.name, { ...webhooks, max_age: webhooks.max_age / 2 });
    await ensureStreams(users.control, { logger: watchful });
    expect((await jsm.streams.info(streams.webhooks.name)).config.max_age).toBe(webhooks.max_age);
    expect((await jsm.streams.info(streams.auditHeads.name)).config.duplicate_window).toBe(heads.duplicate_window / 2);
    expect(warnings.map((line) => JSON.parse(line) as unknown)).toEqual([
      expect.objectContaining({
        stream: streams.auditHeads.name,
        differences: [`duplicate_window: ${heads.duplicate_window / 2} (asked ${heads.duplicate_window})`],
        msg: expect.stringContaining("no service may update it: NATS's operator can (nats stream edit SVC_AUDIT_HEADS)"),
      }),
    ]);
    await jsm.streams.update(streams.auditHeads.name, heads);

    await publishAuditHead(users.control, head(1));
    await publishAuditHead(users.control, head(2));
    expect((await readAuditHeads(users.control)).map((published) => published.seq)).toEqual([1, 2]);
    expect(server.permissionViolations()).toEqual([]);
  });

  it("nats auth — no service's user may delete, update or purge SVC_AUDIT_HEADS, or delete a head: the server refuses each, and the heads stay as they were", async () => {
    const jsm = await jetstreamManager(operator);
    const before = await jsm.streams.info(streams.auditHeads.name);
    expect(before.state.messages).toBe(2);
    const name = streams.auditHeads.name;
    for (const user of NATS_SERVICE_USERS) {
      const own = await jetstreamManager(users[user]);
      await expect(own.streams.delete(name), `${user} delete`).rejects.toThrow(/permission/i);
      // An update could drop the heads with a limit (deny_delete and deny_purge do not stop that).
      await expect(own.streams.update(name, { ...before.config, max_msgs: 1 }), `${user} update`).rejects.toThrow(/permission/i);
      await expect(own.streams.purge(name), `${user} purge`).rejects.toThrow(/permission/i);
      await expect(own.streams.deleteMessage(name, 1), `${user} message delete`).rejects.toThrow(/permission/i);
      // Nor any other stream of svc's.
      await expect(own.streams.delete(streams.storedEvents.name), `${user} delete ${streams.storedEvents.name}`).rejects.toThrow(/permission/i);
      await expect(own.streams.purge(streams.incomingEvents.name), `${user} purge ${streams.incomingEvents.name}`).rejects.toThrow(/permission/i);
    }
    // The server reports each refusal (its log is read as it comes: the last lines may lag).
    const expected = NATS_SERVICE_USERS.flatMap((user) =>
      ['DELETE', 'UPDATE', 'PURGE', 'MSG.DELETE'].map((operation) => `user:${user}" - Publish Violation - Subject "$JS.API.STREAM.${operation}.${name}"`),
    );
    const unreported = () => expected.filter((line) => !server.permissionViolations().some((violation) => violation.includes(line)));
    await until(() => unreported().length === 0);
    expect(unreported()).toEqual([]);

    const after = await jsm.streams.info(streams.auditHeads.name);
    expect(after.config).toEqual(before.config);
    expect(after.state.messages).toBe(2);
    expect((await readAuditHeads(operator)).map((published) => published.seq)).toEqual([1, 2]);
  });
});
