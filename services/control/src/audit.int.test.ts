import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connectBus, ensureStreams, natsAuthorization, readAuditHeads, requestJson, type NatsConnection, type NatsCredentials } from '@svc/bus';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import {
  AUDIT_GENESIS_HASH,
  auditRecordHash,
  streams,
  subjects,
  type AuditFacts,
  type AuditRecord,
  type AuditVerification,
  type ListResponseOf,
} from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { migrateToLatest, openDatabase, sql, type StoreDatabase } from '@svc/store';
import { startPostgres, waitFor, type PostgresProcess } from '@svc/test-support';
import { AuditKeyRequiredError } from './audit-log.js';
import { LOCAL_AUDIT_KEY_FILE, localAuditKey, startAuditTrail, type AuditTrail } from './audit.js';

const logger = createLogger({ name: 'audit-test', level: 'silent' });
const KEY = 'the-audit-key-of-this-test-0123456789';

const fact = (n: number): AuditFacts => ({
  id: `decision:wrk_audit:r${n}`,
  at: new Date(Date.UTC(2026, 10, 26, 12, 0, n)).toISOString(),
  actor: 'alice',
  channel: 'api',
  action: 'decision',
  worker_id: 'wrk_audit',
  request_id: `r${n}`,
  decision: 'deny',
});

describe('control — the audit trail: keyed records, heads published to JetStream, verify names what was changed or deleted', () => {
  let nats: NatsServerProcess<NatsCredentials>;
  let postgres: PostgresProcess;
  let database: StoreDatabase;
  /** The operator's connection: streams, and whoever reports facts and asks for a check. */
  let operator: NatsConnection;
  /** The control service's own NATS user, as deployed. */
  let control: NatsConnection;
  let trail: AuditTrail | undefined;

  const config = (overrides: { auditKey?: string | undefined; auditHeadIntervalS?: number } = {}) => ({
    auditKey: 'auditKey' in overrides ? overrides.auditKey : KEY,
    auditPreviousKeys: [],
    auditHeadIntervalS: overrides.auditHeadIntervalS ?? 3600,
  });
  const start = async (instance: string, overrides: Parameters<typeof config>[0] = {}) => {
    const started = await startAuditTrail({ nc: control, db: database.db, logger, instance, config: config(overrides), queue: 'control' });
    // Its subscriptions reach the server before the operator's connection asks.
    await control.flush();
    return started;
  };
  const append = (n: number) => requestJson(operator, subjects.rpc.appendAudit, fact(n));
  const verify = () => requestJson<AuditVerification>(operator, subjects.rpc.verifyAudit, {});
  const records = async () => (await requestJson<ListResponseOf<AuditRecord>>(operator, subjects.rpc.listAudit, { after_seq: 0, limit: 1000 })).items;

  beforeAll(async () => {
    [nats, postgres] = await Promise.all([launchNatsServer({ authorization: natsAuthorization() }), startPostgres()]);
    operator = await connectBus({ servers: nats.url, name: 'operator', logger, credentials: nats.credentials.operator });
    control = await connectBus({ servers: nats.url, name: 'control', logger, credentials: nats.credentials.control });
    await ensureStreams(operator);
    database = await openDatabase({ url: postgres.url, poolSize: 5 });
    await migrateToLatest(database.db, 'control');
  }, 60_000);
  afterAll(async () => {
    await trail?.stop();
    await Promise.all([operator?.close(), control?.close()]);
    await database?.close();
    await Promise.all([nats?.stop(), postgres?.stop()]);
  });

  it('audit trail — without a key, records are written unkeyed (as before keys existed) and verify checks their chain', async () => {
    trail = await start('control-unkeyed', { auditKey: undefined });
    await append(1);
    await append(2);
    expect((await records()).map((record) => record.key_id)).toEqual([undefined, undefined]);
    // No head yet (the interval is an hour): verify has the head published first, then checks against it.
    expect(await readAuditHeads(operator)).toEqual([]);
    const verified = await verify();
    expect(verified).toEqual({ ok: true, count: 2, unkeyed: 2, heads: 1, latest_head: expect.objectContaining({ seq: 2, instance: 'control-unkeyed' }) });
    expect(await readAuditHeads(operator)).toEqual([verified.latest_head]);
    await trail.stop();
    trail = undefined;
  });

  it('audit trail — with SVC_AUDIT_KEY every new record is sealed; the head is published at the interval and at stop; verify checks keys and heads', async () => {
    trail = await start('control-0', { auditHeadIntervalS: 1 });
    for (const n of [3, 4, 5, 6]) await append(n);
    const written = await records();
    expect(written.map((record) => [record.seq, record.key_id === undefined])).toEqual([
      [1, true],
      [2, true],
      [3, false],
      [4, false],
      [5, false],
      [6, false],
    ]);
    // At the interval: the head, read by control's own NATS user (the one that must be allowed to publish it).
    const atInterval = await waitFor('the head #6 published', async () => (await readAuditHeads(control)).find((head) => head.seq === 6), 5000, 100);
    expect(atInterval).toMatchObject({ seq: 6, hash: written[5]!.hash, key_id: written[5]!.key_id, keyed_from: 3, instance: 'control-0' });
    await trail.stop();

    // At stop, without waiting for the interval.
    trail = await start('control-1');
    await append(7);
    await trail.stop();
    const heads = await readAuditHeads(operator);
    expect(heads.at(-1)).toMatchObject({ seq: 7, instance: 'control-1', keyed_from: 3 });
    // A head seen twice (a restart, another replica) is kept once.
    expect(heads.filter((head) => head.seq === 6)).toHaveLength(1);

    trail = await start('control-2');
    expect(await verify()).toEqual({ ok: true, count: 7, unkeyed: 2, heads: heads.length, latest_head: heads.at(-1) });
  });

  it('audit trail — a keyed trail does not start without its key: the records it would add could not be told from a rewrite', async () => {
    await expect(start('control-keyless', { auditKey: undefined })).rejects.toThrow(AuditKeyRequiredError);
    await expect(start('control-keyless', { auditKey: undefined })).rejects.toThrow(
      /^the audit trail is keyed \(record #7, key [0-9a-f]{16}\) but SVC_AUDIT_KEY is not set: set the key it was written with/,
    );
  });

  /** What a database administrator does with psql: rows changed, hashes recomputed (SHA-256, the recipe in the docs: no key), written back. */
  async function rewriteInSql(from: number, edit: (record: AuditRecord) => AuditRecord): Promise<void> {
    let previousHash = AUDIT_GENESIS_HASH;
    for (const original of await records()) {
      if (original.seq >= from) {
        const { hash: _old, ...content } = { ...(original.seq === from ? edit(original) : original), prev_hash: previousHash };
        const hash = await auditRecordHash(content);
        await sql`UPDATE audit_records SET decision = ${content.decision ?? null}, key_id = ${content.key_id ?? null}, prev_hash = ${content.prev_hash}, hash = ${hash} WHERE seq = ${content.seq}`.execute(
          database.db,
        );
        previousHash = hash;
      } else previousHash = original.hash;
    }
  }

  async function restore(saved: AuditRecord[]): Promise<void> {
    for (const record of saved)
      await sql`UPDATE audit_records SET decision = ${record.decision ?? null}, key_id = ${record.key_id ?? null}, prev_hash = ${record.prev_hash}, hash = ${record.hash} WHERE seq = ${record.seq}`.execute(
        database.db,
      );
  }

  it('audit trail — a record rewritten in SQL with the chain after it recomputed: verify names that record', async () => {
    const saved = await records();
    // The deny of #4 becomes an allow; #4 to #7 get new hashes, each following the one before.
    await rewriteInSql(4, (record) => ({ ...record, decision: 'allow' }));
    expect(await verify()).toMatchObject({
      ok: false,
      count: 4,
      seq: 4,
      problem: 'record #4 was changed after it was written: its HMAC does not match its content',
    });
    // The same, the key's id taken off to pass as a record from before keys: the trail was keyed from #3.
    await restore(saved);
    await rewriteInSql(4, ({ key_id: _key, ...record }) => ({ ...record, decision: 'allow' }));
    expect(await verify()).toMatchObject({
      ok: false,
      seq: 4,
      problem: 'record #4 has no key although the trail is keyed from #3: it was rewritten without the key',
    });
    // A record from before keys, rewritten: the head published when it was the last one names it.
    await restore(saved);
    await rewriteInSql(2, (record) => ({ ...record, decision: 'allow' }));
    expect(await verify()).toMatchObject({ ok: false, seq: 2, problem: expect.stringMatching(/^record #2 is not the one published as the head at /) });
    await restore(saved);
    expect(await verify()).toMatchObject({ ok: true, count: 7 });
  });

  it('audit trail — the newest records deleted: verify reports the published head missing; appended to again, the head still names its place', async () => {
    const headAt = (await readAuditHeads(operator)).at(-1)!;
    expect(headAt.seq).toBe(7);
    await sql`DELETE FROM audit_records WHERE seq > 5`.execute(database.db);
    expect(await verify()).toEqual({
      ok: false,
      count: 5,
      unkeyed: 2,
      heads: expect.any(Number),
      latest_head: headAt,
      seq: 6,
      problem: `the head published at ${headAt.published_at} (#7) is missing: the chain ends at #5, records #6-#7 were deleted`,
    });
    // The service, knowing no better, seals new #6 and #7 with its key: every HMAC matches, but the
    // first head published past #5 (#6, at the interval) is not the record now there.
    await append(8);
    await append(9);
    const firstPast = (await readAuditHeads(operator)).filter((head) => head.seq > 5).sort((a, b) => a.seq - b.seq)[0]!;
    expect(firstPast.seq).toBe(6);
    expect(await verify()).toMatchObject({
      ok: false,
      seq: 6,
      problem: `record #6 is not the one published as the head at ${firstPast.published_at}: the chain was rewritten from here or before`,
    });
  });

  it('audit heads — JetStream refuses to delete or purge a head or to lift that protection, even for the operator; only control may publish one', async () => {
    const jsm = await jetstreamManager(operator);
    const { config: stream } = await jsm.streams.info(streams.auditHeads.name);
    expect(stream).toMatchObject({ deny_delete: true, deny_purge: true });
    await expect(jsm.streams.deleteMessage(streams.auditHeads.name, 1)).rejects.toThrow(/delete/i);
    await expect(jsm.streams.purge(streams.auditHeads.name)).rejects.toThrow(/purge/i);
    await expect(jsm.streams.update(streams.auditHeads.name, { ...stream, deny_delete: false })).rejects.toThrow(/deny message deletes|cannot|can not/i);
    expect((await jsm.streams.info(streams.auditHeads.name)).state.messages).toBe((await readAuditHeads(operator)).length);
    const gateway = await connectBus({ servers: nats.url, name: 'gateway', logger, credentials: nats.credentials.gateway });
    try {
      const forged = { seq: 1000, hash: '0'.repeat(64), published_at: new Date().toISOString(), instance: 'gateway' };
      await expect(jetstream(gateway).publish(subjects.auditHeads, JSON.stringify(forged), { timeout: 1000 })).rejects.toThrow();
    } finally {
      await gateway.close();
    }
    expect((await readAuditHeads(operator)).some((head) => head.seq === 1000)).toBe(false);
  });

  it('audit verify — a request with anything in it is refused as invalid, and nothing is checked', async () => {
    await expect(requestJson(operator, subjects.rpc.verifyAudit, { from_seq: 3 })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('audit heads — a fresh trail passes with no head; its first records get their head published by verify before the check', async () => {
    await sql`DELETE FROM audit_records`.execute(database.db);
    await trail?.stop();
    trail = undefined;
    await (await jetstreamManager(operator)).streams.delete(streams.auditHeads.name);
    await ensureStreams(operator);
    trail = await start('control-3');
    expect(await verify()).toEqual({ ok: true, count: 0, unkeyed: 0, heads: 0 });
    await append(10);
    await append(11);
    // Published at start (no record then) and not again for an hour: verify publishes it, then checks.
    expect(await readAuditHeads(operator)).toEqual([]);
    expect(await verify()).toMatchObject({ ok: true, count: 2, unkeyed: 0, heads: 1, latest_head: { seq: 2, keyed_from: 1, instance: 'control-3' } });
  });

  it("audit heads — the heads stream deleted by NATS's operator after heads were published: verify fails naming the missing heads, and so do a stripped or shortened chain; the stream is not made again behind its back", async () => {
    const problem =
      "no published head: the heads stream SVC_AUDIT_HEADS is missing (deleted: the services make it at start, and only NATS's operator may delete it), so nothing outside the database says where the trail ended or where keying began; the trail cannot be checked against it";
    const saved = await records();
    expect(saved).toHaveLength(2);
    await (await jetstreamManager(operator)).streams.delete(streams.auditHeads.name);
    expect(await verify()).toEqual({ ok: false, count: 2, unkeyed: 0, heads: 0, problem });
    // Verify neither made the stream again nor published into it: that would hide the deletion.
    await expect((await jetstreamManager(operator)).streams.info(streams.auditHeads.name)).rejects.toThrow(/not found/i);

    // The database administrator's part: every key stripped and the chain re-hashed as SHA-256 (as if written before keys)…
    for (const seq of [1, 2]) await rewriteInSql(seq, ({ key_id: _key, ...record }) => record);
    expect((await records()).map((record) => record.key_id)).toEqual([undefined, undefined]);
    expect(await verify()).toEqual({ ok: false, count: 2, unkeyed: 2, heads: 0, problem });
    // …or the newest record deleted.
    await restore(saved);
    await sql`DELETE FROM audit_records WHERE seq > 1`.execute(database.db);
    expect(await verify()).toEqual({ ok: false, count: 1, unkeyed: 0, heads: 0, problem });
    await append(11);

    // Made again (a service's start), the stream begins anew from the trail as it is then: what it held before is lost (docs/audit.md).
    await ensureStreams(operator);
    expect(await verify()).toMatchObject({ ok: true, count: 2, heads: 1, latest_head: { seq: 2, keyed_from: 1 } });
  });

  it('audit key — the local stack keeps its key in its state directory, 0600, made once and read back', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-audit-key-'));
    try {
      const key = await localAuditKey(stateDir);
      expect(key.length).toBeGreaterThanOrEqual(32);
      const file = path.join(stateDir, LOCAL_AUDIT_KEY_FILE);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      expect((await readFile(file, 'utf8')).trim()).toBe(key);
      expect(await localAuditKey(stateDir)).toBe(key);
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  });
});
