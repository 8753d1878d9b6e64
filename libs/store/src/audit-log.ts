import { sql, type Kysely, type Selectable } from 'kysely';
import { AUDIT_GENESIS_HASH, auditRecordHash, auditRecordMac, type AuditFacts, type AuditKey, type AuditRecord, type ListAuditRpcType } from '@svc/protocol';
import type { AuditRecordsTable, Database } from './schema.js';

function toRecord(row: Selectable<AuditRecordsTable>): AuditRecord {
  // Absent facts are absent (not null) in the record, as when it was hashed.
  const optional = {
    worker_id: row.worker_id,
    session_id: row.session_id,
    request_id: row.request_id,
    decision: row.decision,
    action_hash: row.action_hash,
    details: row.details,
    key_id: row.key_id,
  };
  return {
    seq: Number(row.seq),
    id: row.id,
    at: row.at.toISOString(),
    actor: row.actor,
    channel: row.channel as AuditRecord['channel'],
    action: row.action as AuditRecord['action'],
    ...(Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== null)) as Partial<AuditRecord>),
    prev_hash: row.prev_hash,
    hash: row.hash,
  };
}

/** A record without a key would follow keyed ones: nobody could tell it from a rewrite (docs/audit.md). */
export class AuditKeyRequiredError extends Error {
  override readonly name = 'AuditKeyRequiredError';
}

/** The last record of the chain: its place, its hash, the key that sealed it. */
export interface AuditChainEnd {
  seq: number;
  hash: string;
  key_id?: string;
}

/** Records read at once when the whole chain is read. */
const CHAIN_PAGE = 1000;

/**
 * The audit trail: one hash chain. Appending takes the table's lock for the transaction, so the
 * chain has one writer at a time whichever replica writes; a fact already recorded (its `id`)
 * is not recorded again. With a `key`, each record is sealed with its HMAC; without one, with a
 * plain SHA-256 — and only while no record is keyed yet.
 */
export function createAuditLog(db: Kysely<Database>, options: { key?: AuditKey | undefined } = {}) {
  const { key } = options;
  return {
    /** Records a fact at the end of the chain; answers the record, or undefined when the fact was recorded before. */
    async append(facts: AuditFacts): Promise<AuditRecord | undefined> {
      return db.transaction().execute(async (trx) => {
        await sql`LOCK TABLE audit_records IN EXCLUSIVE MODE`.execute(trx);
        const known = await trx.selectFrom('audit_records').select('seq').where('id', '=', facts.id).executeTakeFirst();
        if (known) return undefined;
        const last = await trx.selectFrom('audit_records').select(['seq', 'hash', 'key_id']).orderBy('seq', 'desc').limit(1).executeTakeFirst();
        if (!key && last?.key_id)
          throw new AuditKeyRequiredError(`the audit trail is keyed (record #${last.seq}, key ${last.key_id}): set SVC_AUDIT_KEY to add to it`);
        // The time as the database will give it back (milliseconds), so the hash can be checked later.
        const content: Omit<AuditRecord, 'hash'> = {
          seq: (last ? Number(last.seq) : 0) + 1,
          ...facts,
          at: new Date(facts.at).toISOString(),
          ...(key ? { key_id: key.id } : {}),
          prev_hash: last?.hash ?? AUDIT_GENESIS_HASH,
        };
        const hash = key ? await auditRecordMac(content, key) : await auditRecordHash(content);
        await trx
          .insertInto('audit_records')
          .values({
            seq: content.seq,
            id: content.id,
            at: new Date(content.at),
            actor: content.actor,
            channel: content.channel,
            action: content.action,
            worker_id: content.worker_id ?? null,
            session_id: content.session_id ?? null,
            request_id: content.request_id ?? null,
            decision: content.decision ?? null,
            action_hash: content.action_hash ?? null,
            details: content.details === undefined ? null : JSON.stringify(content.details),
            key_id: content.key_id ?? null,
            prev_hash: content.prev_hash,
            hash,
          })
          .execute();
        return { ...content, hash };
      });
    },

    /** Records after `after_seq`, in chain order, filtered; `total` counts every match. */
    async list(query: ListAuditRpcType): Promise<{ items: AuditRecord[]; total: number }> {
      let filtered = db.selectFrom('audit_records');
      if (query.actor !== undefined) filtered = filtered.where('actor', '=', query.actor);
      if (query.action !== undefined) filtered = filtered.where('action', '=', query.action);
      if (query.channel !== undefined) filtered = filtered.where('channel', '=', query.channel);
      if (query.worker_id !== undefined) filtered = filtered.where('worker_id', '=', query.worker_id);
      const [rows, count] = await Promise.all([
        filtered
          .selectAll()
          .where('seq', '>', String(query.after_seq) as never)
          .orderBy('seq')
          .limit(query.limit)
          .execute(),
        filtered.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
      ]);
      return { items: rows.map(toRecord), total: Number(count.total) };
    },

    /** The chain's last record (undefined: no record yet). */
    async end(): Promise<AuditChainEnd | undefined> {
      const last = await db.selectFrom('audit_records').select(['seq', 'hash', 'key_id']).orderBy('seq', 'desc').limit(1).executeTakeFirst();
      return last && { seq: Number(last.seq), hash: last.hash, ...(last.key_id ? { key_id: last.key_id } : {}) };
    },

    /** The hash of record `seq` (undefined: no such record). */
    async hashAt(seq: number): Promise<string | undefined> {
      const row = await db
        .selectFrom('audit_records')
        .select('hash')
        .where('seq', '=', String(seq) as never)
        .executeTakeFirst();
      return row?.hash;
    },

    /** The first keyed record's place (undefined: none is keyed). */
    async keyedFrom(): Promise<number | undefined> {
      const first = await db.selectFrom('audit_records').select('seq').where('key_id', 'is not', null).orderBy('seq').limit(1).executeTakeFirst();
      return first && Number(first.seq);
    },

    /** Every record from #1, in order, read a page at a time. */
    async *chain(): AsyncGenerator<AuditRecord> {
      for (let after = 0; ;) {
        const rows = await db
          .selectFrom('audit_records')
          .selectAll()
          .where('seq', '>', String(after) as never)
          .orderBy('seq')
          .limit(CHAIN_PAGE)
          .execute();
        yield* rows.map(toRecord);
        if (rows.length < CHAIN_PAGE) return;
        after = Number(rows.at(-1)!.seq);
      }
    },
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;
