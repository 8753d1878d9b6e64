import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importAuditKey, verifyAuditChain, type AuditFacts } from '@svc/protocol';
import { migrateToLatest, openDatabase, type StoreDatabase } from '@svc/store';
import { startPostgres, type PostgresProcess } from '@svc/test-support';
import { AuditKeyRequiredError, createAuditLog, type AuditLog } from './audit-log.js';

const fact = (id: string, extra: Partial<AuditFacts> = {}): AuditFacts => ({
  id,
  at: '2026-11-25T03:00:00.123Z',
  actor: 'alice',
  channel: 'api',
  action: 'decision',
  worker_id: 'wrk_1',
  request_id: id,
  decision: 'allow',
  ...extra,
});

describe.each([['postgres'], ['pglite']] as const)('the audit log on %s', (backend) => {
  let postgres: PostgresProcess | undefined;
  let database: StoreDatabase;
  let log: AuditLog;
  beforeAll(async () => {
    postgres = backend === 'postgres' ? await startPostgres() : undefined;
    database = await openDatabase(postgres ? { url: postgres.url, poolSize: 10 } : {});
    expect(await migrateToLatest(database.db, 'control')).toEqual([
      '2026-11-25T0300-audit',
      '2026-11-25T0600-webhooks',
      '2026-11-26T2200-audit-keys',
      '2026-11-27T1700-approvals',
      '2026-11-27T1810-rule-revocations',
    ]);
    log = createAuditLog(database.db);
  });
  afterAll(async () => {
    await database?.close();
    await postgres?.stop();
  });

  it('appends a chain: seq 1, 2, 3 …, each hashing the one before; a fact reported twice is recorded once', async () => {
    const first = await log.append(fact('r1', { details: { tool_name: 'Bash', nested: { b: 1, a: [2, 1] } } }));
    expect(first).toMatchObject({ seq: 1, prev_hash: '0'.repeat(64) });
    expect(await log.append(fact('r1'))).toBeUndefined();
    const second = await log.append(fact('r2', { channel: 'cli' }));
    expect(second).toMatchObject({ seq: 2, prev_hash: first!.hash });
    const { items, total } = await log.list({ after_seq: 0, limit: 100 });
    expect(total).toBe(2);
    // Read back from the store, the records hash as they did when written (absent facts absent, jsonb keys in any order).
    expect(items).toEqual([first, second]);
    expect(await verifyAuditChain(items)).toEqual({ ok: true, count: 2, unkeyed: 2, heads: 0 });
  });

  it('writers at once (several replicas) still make one unbroken chain, every fact once', async () => {
    // Three replicas, each with its own idea of where the chain ends, and each reporting every fact twice.
    const replicas = [log, createAuditLog(database.db), createAuditLog(database.db)];
    await Promise.all(Array.from({ length: 120 }, (_, i) => replicas[i % 3]!.append(fact(`w${i % 20}`, { actor: `user-${i % 3}` }))));
    const { items } = await log.list({ after_seq: 0, limit: 1000 });
    expect(items.map((r) => r.seq)).toEqual(Array.from({ length: items.length }, (_, i) => i + 1));
    expect(new Set(items.map((r) => r.id)).size).toBe(items.length);
    expect(items.filter((r) => r.id.startsWith('w'))).toHaveLength(20);
    expect(await verifyAuditChain(items)).toMatchObject({ ok: true });
    const byUser = await log.list({ after_seq: 0, limit: 1000, actor: 'user-1' });
    expect(byUser.items.every((r) => r.actor === 'user-1')).toBe(true);
    expect(byUser.total).toBe(byUser.items.length);
  });

  it('audit log — a key seals every record after the unkeyed ones; reading the chain, its end, a hash at a place and where keys began', async () => {
    const before = (await log.end())!;
    expect(await log.keyedFrom()).toBeUndefined();
    const key = await importAuditKey('the-store-test-key-of-32-characters-or-more');
    const keyed = createAuditLog(database.db, { key });
    const sealed = await keyed.append(fact('k1'));
    expect(sealed).toMatchObject({ seq: before.seq + 1, key_id: key.id, prev_hash: before.hash });
    await keyed.append(fact('k2', { details: { tool_name: 'Bash' } }));
    const end = (await log.end())!;
    expect(end).toEqual({ seq: before.seq + 2, hash: expect.stringMatching(/^[0-9a-f]{64}$/), key_id: key.id });
    expect(await log.hashAt(sealed!.seq)).toBe(sealed!.hash);
    expect(await log.hashAt(end.seq + 1)).toBeUndefined();
    expect(await log.keyedFrom()).toBe(sealed!.seq);
    const chain = [];
    for await (const record of log.chain()) chain.push(record);
    expect(chain.map((record) => record.seq)).toEqual(Array.from({ length: end.seq }, (_, i) => i + 1));
    // Read back from the store, the keyed records check with the key; the ones before, by their hash.
    expect(await verifyAuditChain(chain, { keys: [key] })).toEqual({ ok: true, count: end.seq, unkeyed: before.seq, heads: 0 });
  });

  it('audit log — once a record is keyed, one without a key is refused (it could not be told from a rewrite)', async () => {
    const end = (await log.end())!;
    expect(end.key_id).toBeDefined();
    await expect(log.append(fact('unkeyed-after-keyed'))).rejects.toThrow(AuditKeyRequiredError);
    await expect(log.append(fact('unkeyed-after-keyed'))).rejects.toThrow(
      `the audit trail is keyed (record #${end.seq}, key ${end.key_id}): set SVC_AUDIT_KEY to add to it`,
    );
    expect(await log.end()).toEqual(end);
  });
});
