import { describe, expect, it } from 'vitest';
import { AUDIT_GENESIS_HASH, actionHash, auditRecordHash, canonicalJson, verifyAuditChain, type AuditRecord } from './audit.js';

async function chain(count: number): Promise<AuditRecord[]> {
  const records: AuditRecord[] = [];
  for (let seq = 1; seq <= count; seq++) {
    const content = {
      seq,
      id: `f${seq}`,
      at: '2026-11-25T03:00:00.000Z',
      actor: 'alice',
      channel: 'api' as const,
      action: 'decision' as const,
      prev_hash: records.at(-1)?.hash ?? AUDIT_GENESIS_HASH,
    };
    records.push({ ...content, hash: await auditRecordHash(content) });
  }
  return records;
}

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
    expect(await verifyAuditChain(records)).toEqual({ ok: true, count: 4 });
    const edited = records.map((r) => (r.seq === 2 ? { ...r, actor: 'mallory' } : r));
    expect(await verifyAuditChain(edited)).toMatchObject({
      ok: false,
      seq: 2,
      problem: 'record #2 was changed after it was written: its hash does not match its content',
    });
    expect(await verifyAuditChain(records.filter((r) => r.seq !== 3))).toMatchObject({
      ok: false,
      seq: 4,
      problem: 'record #3 is missing (the next one is #4)',
    });
    // Edited and its own hash recomputed: the next record no longer follows it.
    const { hash: _old, ...content } = { ...records[1]!, actor: 'mallory' };
    const rehashed = records.map((r) => (r.seq === 2 ? { ...content, hash: 'f'.repeat(64) } : r));
    rehashed[1]!.hash = await auditRecordHash(content);
    expect(await verifyAuditChain(rehashed)).toMatchObject({ ok: false, seq: 3, problem: 'record #3 does not follow the hash of #2: one of them was changed' });
  });
});
