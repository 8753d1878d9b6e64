import { AUDIT_GENESIS_HASH, auditRecordHash, auditRecordMac, type AuditFacts, type AuditKey, type AuditRecord, type ListAuditRpcType } from '@svc/protocol';
import { sql, type AuditRecordsTable, type Database, type Insertable, type Kysely, type Selectable } from '@svc/store';

/** A row as the table gives it (libs/store/src/schema.ts). */
type Row = Selectable<AuditRecordsTable>;

function toRecord(row: Row): AuditRecord {
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

function toRow(record: AuditRecord): Insertable<AuditRecordsTable> {
  return {
    seq: record.seq,
    id: record.id,
    at: new Date(record.at),
    actor: record.actor,
    channel: record.channel,
    action: record.action,
    worker_id: record.worker_id ?? null,
    session_id: record.session_id ?? null,
    request_id: record.request_id ?? null,
    decision: record.decision ?? null,
    action_hash: record.action_hash ?? null,
    details: record.details === undefined ? null : JSON.stringify(record.details),
    key_id: record.key_id ?? null,
    prev_hash: record.prev_hash,
    hash: record.hash,
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
 * The audit trail (the `audit_records` table): one hash chain. A record is appended by one
 * statement that inserts it only where the chain ends as this writer last saw it (the record
 * before it in place, with its hash, and nothing after): one round trip to the database. When
 * that finds the chain moved on (another replica appended, the fact was recorded, the end was
 * cut), the append is made again in a transaction that locks the table, so every writer gets
 * its turn. `seq` is the key: of two writers after one end, one wins. A fact already recorded
 * (its `id`) is not recorded again. With a `key`, each record is sealed with its HMAC; without
 * one, with a plain SHA-256 — and only while no record is keyed yet.
 */
export function createAuditLog(db: Kysely<Database>, options: { key?: AuditKey | undefined } = {}) {
  /** The chain's end as this writer last saw it (null: empty; undefined: to be read). */
  let end: AuditChainEnd | null | undefined;
  /** One append at a time from this writer, each after the end the one before made. */
  let queue: Promise<unknown> = Promise.resolve();
  const reads = chainReads(db);

  async function appendToChain(facts: AuditFacts): Promise<AuditRecord | undefined> {
    if (end === undefined) end = (await reads.end()) ?? null;
    if (options.key || !end?.key_id) {
      const record = await sealed(facts, end, options.key);
      try {
        if (await insertAtEnd(db, record, end)) {
          end = endOf(record);
          return record;
        }
      } catch (err) {
        if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION) {
          end = undefined;
          throw err;
        }
      }
    }
    end = undefined;
    const appended = await appendLocked(db, options.key, facts);
    end = appended.end;
    return appended.record;
  }

  return {
    /** Records a fact at the end of the chain; answers the record, or undefined when the fact was recorded before. */
    append(facts: AuditFacts): Promise<AuditRecord | undefined> {
      const appended = queue.then(() => appendToChain(facts));
      queue = appended.catch(() => undefined);
      return appended;
    },
    ...reads,
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;

/** Postgres's (and PGlite's) SQLSTATE for a duplicate key. */
const UNIQUE_VIOLATION = '23505';

/** The record of `facts` that follows `end`, sealed with `key` (hashed without one). */
async function sealed(facts: AuditFacts, end: AuditChainEnd | null, key: AuditKey | undefined): Promise<AuditRecord> {
  // The time as the database will give it back (milliseconds), so the hash can be checked later.
  const content: Omit<AuditRecord, 'hash'> = {
    seq: (end?.seq ?? 0) + 1,
    ...facts,
    at: new Date(facts.at).toISOString(),
    ...(key ? { key_id: key.id } : {}),
    prev_hash: end?.hash ?? AUDIT_GENESIS_HASH,
  };
  return { ...content, hash: key ? await auditRecordMac(content, key) : await auditRecordHash(content) };
}

/** Inserts `record` if the chain still ends at `end`; false when it does not (nothing inserted). */
async function insertAtEnd(db: Kysely<Database>, record: AuditRecord, end: AuditChainEnd | null): Promise<boolean> {
  const row = toRow(record);
  const endHolds = end
    ? sql`(SELECT hash FROM audit_records WHERE seq = ${String(end.seq)}::bigint) = ${end.hash}`
    : sql`NOT EXISTS (SELECT 1 FROM audit_records)`;
  const { rows } = await sql<{ seq: string }>`
    INSERT INTO audit_records (seq, id, at, actor, channel, action, worker_id, session_id, request_id, decision, action_hash, details, key_id, prev_hash, hash)
    SELECT ${String(row.seq)}::bigint, ${row.id}, ${row.at}::timestamptz, ${row.actor}, ${row.channel}, ${row.action}, ${row.worker_id}, ${row.session_id},
      ${row.request_id}, ${row.decision}, ${row.action_hash}, ${row.details}::jsonb, ${row.key_id}, ${row.prev_hash}, ${row.hash}
    WHERE ${endHolds} AND NOT EXISTS (SELECT 1 FROM audit_records WHERE seq >= ${String(row.seq)}::bigint)
    RETURNING seq`.execute(db);
  return rows.length === 1;
}

const endOf = (record: AuditRecord): AuditChainEnd => ({ seq: record.seq, hash: record.hash, ...(record.key_id ? { key_id: record.key_id } : {}) });

/** The append under the table's lock: the chain's end read, the fact looked up, the record inserted, in one transaction. */
async function appendLocked(
  db: Kysely<Database>,
  key: AuditKey | undefined,
  facts: AuditFacts,
): Promise<{ record: AuditRecord | undefined; end: AuditChainEnd | null }> {
  return db.transaction().execute(async (trx) => {
    await sql`LOCK TABLE audit_records IN EXCLUSIVE MODE`.execute(trx);
    const end = (await chainReads(trx).end()) ?? null;
    if (await trx.selectFrom('audit_records').select('seq').where('id', '=', facts.id).executeTakeFirst()) return { record: undefined, end };
    if (!key && end?.key_id)
      throw new AuditKeyRequiredError(`the audit trail is keyed (record #${end.seq}, key ${end.key_id}): set SVC_AUDIT_KEY to add to it`);
    const record = await sealed(facts, end, key);
    await trx.insertInto('audit_records').values(toRow(record)).execute();
    return { record, end: endOf(record) };
  });
}

/** Reading the chain: filtered pages for the API, its end and single hashes for the published heads, all of it for a check. */
function chainReads(db: Kysely<Database>) {
  return {
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
