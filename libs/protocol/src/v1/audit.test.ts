import { describe, expect, it } from 'vitest';
import {
  AUDIT_GENESIS_HASH,
  actionHash,
  auditRecordHash,
  auditRecordMac,
  canonicalJson,
  importAuditKey,
  verifyAuditChain,
  type AuditHead,
  type AuditKey,
  type AuditRecord,
} from './audit.js';

const SECRET = 'a-test-key-of-more-than-32-characters';

/** A chain of `count` records: the first `unkeyed` without a key (written before keys existed), the rest sealed with `key`. */
async function chain(count: number, options: { key?: AuditKey; unkeyed?: number } = {}): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  for (let seq = 1; seq <= count; seq++) {
    const key = seq > (options.unkeyed ?? count) ? options.key : undefined;
    const content = {
      seq,
      id: `f${seq}`,
      at: '2026-11-25T03:00:00.000Z',
      actor: 'alice',
      channel: 'api' as const,
      action: 'decision' as const,
      ...(key ? { key_id: key.id } : {}),
      prev_hash: records.at(-1)?.hash ?? AUDIT_GENESIS_HASH,
    };
    records.push({ ...content, hash: key ? await auditRecordMac(content, key) : await auditRecordHash(content) });
  }
  return records;
}

/** What someone with the database's password can do: edit record `seq`, then recompute every hash from it on (SHA-256: they have no key). */
async function rewrite(records: AuditRecord[], seq: number, edit: (record: AuditRecord) => AuditRecord): Promise<AuditRecord[]> {
  const rewritten: AuditRecord[] = [];
  for (const record of records) {
    const previous = rewritten.at(-1);
    if (record.seq < seq) rewritten.push(record);
    else {
      const { hash: _old, ...content } = { ...(record.seq === seq ? edit(record) : record), prev_hash: previous?.hash ?? AUDIT_GENESIS_HASH };
      rewritten.push({ ...content, hash: await auditRecordHash(content) });
    }
  }
  return rewritten;
}

const headOf = (record: AuditRecord, extra: Partial<AuditHead> = {}): AuditHead => ({
  seq: record.seq,
  hash: record.hash,
  ...(record.key_id ? { key_id: record.key_id } : {}),
  published_at: '2026-11-25T04:00:00.000Z',
  instance: 'control-0',
  ...extra,
});

describe('the audit chain', () => {
  it('canonical JSON sorts keys at every depth and leaves out what is undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[2,{"y":2,"z":1}]},"b":1}');
  });

  it('the action hash names the tool and its input, whatever the key order', async () => {
    expect(await actionHash('Bash', { command: 'ls', timeout: 5 })).toBe(await actionHash('Bash', { timeout: 5, command: 'ls' }));
    expect(await actionHash('Bash', { command: 'ls' })).not.toBe(await actionHash('Bash', { command: 'ls -a' }));
  });

  it('an intact chain verifies; an edited, a removed or a re-hashed record is named', async () => {
    const records = await chain(4);
    expect(await verifyAuditChain(records)).toEqual({ ok: true, count: 4, unkeyed: 4, heads: 0 });
    const edited = records.map((r) => (r.seq === 2 ? { ...r, actor: 'mallory' } : r));
    expect(await verifyAuditChain(edited)).toMatchObject({
      ok: false,
      seq: 2,
      problem: 'record #2 was changed after it was written: its hash does not match its content',
    });
    // The missing record is the one named.
    expect(await verifyAuditChain(records.filter((r) => r.seq !== 3))).toMatchObject({
      ok: false,
      seq: 3,
      problem: 'record #3 is missing (the next one is #4)',
    });
    // Edited and its own hash recomputed: the next record no longer follows it.
    const { hash: _old, ...content } = { ...records[1]!, actor: 'mallory' };
    const rehashed = records.map((r) => (r.seq === 2 ? { ...content, hash: 'f'.repeat(64) } : r));
    rehashed[1]!.hash = await auditRecordHash(content);
    expect(await verifyAuditChain(rehashed)).toMatchObject({ ok: false, seq: 3, problem: 'record #3 does not follow the hash of #2: one of them was changed' });
  });

  it('audit keys — the key id names the key and reveals nothing; a short key is refused', async () => {
    const key = await importAuditKey(SECRET);
    expect(key.id).toMatch(/^[0-9a-f]{16}$/);
    expect((await importAuditKey(SECRET)).id).toBe(key.id);
    expect((await importAuditKey(`${SECRET}!`)).id).not.toBe(key.id);
    expect(key.id).not.toContain(Buffer.from(SECRET).toString('hex').slice(0, 8));
    await expect(importAuditKey('too-short')).rejects.toThrow('an audit key needs at least 32 characters');
  });

  it('audit keys — the HMAC depends on the key and the content; a record names the key it was sealed with', async () => {
    const key = await importAuditKey(SECRET);
    const other = await importAuditKey(`${SECRET}-other`);
    const [record] = await chain(1, { key, unkeyed: 0 });
    const { hash, ...content } = record!;
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hash).not.toBe(await auditRecordHash(content));
    expect(await auditRecordMac(content, key)).toBe(hash);
    expect(await auditRecordMac({ ...content, actor: 'mallory' }, key)).not.toBe(hash);
    // Sealing with a key the record does not name is a bug, said at once.
    expect(() => auditRecordMac(content, other)).toThrow(`record #1 names key ${key.id}, not ${other.id}`);
  });

  it('audit keys — a keyed chain verifies with its key; without it, its first keyed record is named', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(5, { key, unkeyed: 2 });
    expect(await verifyAuditChain(records, { keys: [key] })).toEqual({ ok: true, count: 5, unkeyed: 2, heads: 0 });
    expect(await verifyAuditChain(records)).toMatchObject({
      ok: false,
      seq: 3,
      problem: `record #3 names key ${key.id}, which is not this service's: it cannot be checked (SVC_AUDIT_KEY)`,
    });
    // A key changed: the old records are checked with the old key, given beside the new one.
    const next = await importAuditKey(`${SECRET}-next`);
    expect(await verifyAuditChain(records, { keys: [next, key] })).toMatchObject({ ok: true, count: 5 });
  });

  it('audit keys — a record rewritten and the chain recomputed without the key is named', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(6, { key, unkeyed: 1 });
    // Keeping its key id: the HMAC does not match.
    const recomputed = await rewrite(records, 4, (record) => ({ ...record, decision: 'allow' }));
    expect(await verifyAuditChain(recomputed, { keys: [key] })).toMatchObject({
      ok: false,
      count: 4,
      seq: 4,
      problem: 'record #4 was changed after it was written: its HMAC does not match its content',
    });
    // Stripped of its key id, to pass as written before keys: a keyed record before it gives it away.
    const stripped = await rewrite(records, 4, ({ key_id: _key, ...record }) => record);
    const strippedOn = await rewrite(stripped, 5, ({ key_id: _key, ...record }) => record);
    expect(await verifyAuditChain(await rewrite(strippedOn, 6, ({ key_id: _key, ...record }) => record), { keys: [key] })).toMatchObject({
      ok: false,
      seq: 4,
      problem: 'record #4 has no key although the trail is keyed from #2: it was rewritten without the key',
    });
  });

  it('audit heads — every keyed record stripped of its key: the published keyed_from names the first', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(4, { key, unkeyed: 1 });
    let stripped = records;
    for (const seq of [2, 3, 4]) stripped = await rewrite(stripped, seq, ({ key_id: _key, ...record }) => record);
    // Alone, such a chain looks written before keys existed…
    expect(await verifyAuditChain(stripped, { keys: [key] })).toMatchObject({ ok: true, unkeyed: 4 });
    // …but a head said the trail was keyed from #2.
    expect(await verifyAuditChain(stripped, { keys: [key], heads: [headOf(records[2]!, { keyed_from: 2 })] })).toMatchObject({
      ok: false,
      seq: 2,
      problem: 'record #2 has no key although the trail is keyed from #2: it was rewritten without the key',
    });
  });

  it('audit heads — published heads that match pass; the newest records deleted: the head is reported missing', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(8, { key, unkeyed: 0 });
    const heads = [headOf(records[2]!), headOf(records[5]!, { published_at: '2026-11-25T05:00:00.000Z' }), headOf(records[5]!, { instance: 'control-1' })];
    expect(await verifyAuditChain(records, { keys: [key], heads })).toEqual({ ok: true, count: 8, unkeyed: 0, heads: 3, latest_head: heads[1] });
    expect(await verifyAuditChain(records.slice(0, 4), { keys: [key], heads })).toMatchObject({
      ok: false,
      count: 4,
      seq: 5,
      problem: 'the head published at 2026-11-25T05:00:00.000Z (#6) is missing: the chain ends at #4, records #5-#6 were deleted',
    });
    // Everything deleted.
    expect(await verifyAuditChain([], { keys: [key], heads })).toMatchObject({ ok: false, count: 0, seq: 1 });
  });

  it('audit heads — the newest records deleted and written again (the service appends on a shortened chain): the head published before names the place', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(6, { key, unkeyed: 0 });
    const heads = [headOf(records[5]!)];
    // #5 and #6 deleted; the service, knowing no better, seals new #5 and #6 with its key: every HMAC matches.
    const regrown = records.slice(0, 4);
    for (const seq of [5, 6]) {
      const content = { ...records[seq - 1]!, id: `new${seq}`, prev_hash: regrown.at(-1)!.hash };
      const { hash: _old, ...rest } = content;
      regrown.push({ ...rest, hash: await auditRecordMac(rest, key) });
    }
    expect(await verifyAuditChain(regrown, { keys: [key] })).toMatchObject({ ok: true });
    expect(await verifyAuditChain(regrown, { keys: [key], heads })).toMatchObject({
      ok: false,
      seq: 6,
      problem: 'record #6 is not the one published as the head at 2026-11-25T04:00:00.000Z: the chain was rewritten from here or before',
    });
  });

  it('audit heads — the heads stream missing: verify fails, naming the missing heads, however intact the chain looks (even with no record)', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(4, { key, unkeyed: 1 });
    const missing = {
      ok: false,
      count: 4,
      unkeyed: 1,
      heads: 0,
      problem:
        "no published head: the heads stream SVC_AUDIT_HEADS is missing (deleted: the services make it at start, and only NATS's operator may delete it), so nothing outside the database says where the trail ended or where keying began; the trail cannot be checked against it",
    };
    expect(await verifyAuditChain(records, { keys: [key], heads: 'missing' })).toEqual(missing);
    // Nothing left at all: still no proof that nothing was there.
    expect(await verifyAuditChain([], { keys: [key], heads: 'missing' })).toEqual({ ...missing, count: 0, unkeyed: 0 });
    // A record that fails is named first: it says more than the missing heads.
    const edited = records.map((r) => (r.seq === 3 ? { ...r, decision: 'allow' as const } : r));
    expect(await verifyAuditChain(edited, { keys: [key], heads: 'missing' })).toMatchObject({
      ok: false,
      seq: 3,
      problem: expect.stringMatching(/^record #3 was changed/),
    });
  });

  it('audit heads — every key stripped and the chain re-hashed, or the newest records deleted, with the heads stream gone: verify fails, not passes', async () => {
    const key = await importAuditKey(SECRET);
    const records = await chain(5, { key, unkeyed: 1 });
    let stripped = records;
    for (const seq of [2, 3, 4, 5]) stripped = await rewrite(stripped, seq, ({ key_id: _key, ...record }) => record);
    // The chain agrees with itself: written before keys, it would seem.
    expect(await verifyAuditChain(stripped, { keys: [key] })).toMatchObject({ ok: true, unkeyed: 5 });
    for (const rewritten of [stripped, records.slice(0, 3)]) {
      const result = await verifyAuditChain(rewritten, { keys: [key], heads: 'missing' });
      expect(result).toMatchObject({ ok: false, heads: 0, problem: expect.stringMatching(/^no published head: the heads stream SVC_AUDIT_HEADS is missing/) });
      expect(result.seq).toBeUndefined();
    }
  });

  it('audit heads — an empty heads stream: a fresh trail with no record passes; a trail with records and no head fails', async () => {
    const key = await importAuditKey(SECRET);
    expect(await verifyAuditChain([], { keys: [key], heads: [] })).toEqual({ ok: true, count: 0, unkeyed: 0, heads: 0 });
    const records = await chain(3, { key, unkeyed: 0 });
    expect(await verifyAuditChain(records, { keys: [key], heads: [] })).toEqual({
      ok: false,
      count: 3,
      unkeyed: 0,
      heads: 0,
      problem: 'no published head: the heads stream SVC_AUDIT_HEADS holds none, although the trail has 3 records; the trail cannot be checked against it',
    });
    expect(await verifyAuditChain(records.slice(0, 1), { keys: [key], heads: [] })).toMatchObject({
      problem: 'no published head: the heads stream SVC_AUDIT_HEADS holds none, although the trail has 1 record; the trail cannot be checked against it',
    });
    // One head, of the end: the records after the last head are the keys' alone to protect, as documented.
    expect(await verifyAuditChain(records, { keys: [key], heads: [headOf(records[2]!)] })).toMatchObject({ ok: true, heads: 1 });
  });
});
