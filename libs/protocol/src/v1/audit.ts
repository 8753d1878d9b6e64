import Type, { type Static } from 'typebox';
import { SessionId, Timestamp, WorkerId } from './primitives.js';
import { DecisionSchema } from './events.js';
import { ListResponse } from './lists.js';
import { streams } from './bus.js';

/**
 * How a person reached svc: the CLI and the console say so in `X-Svc-Channel`; anything else is
 * the API. `link` is a signed link from a notification; `policy` and `timeout` decide by
 * themselves (the sidecar's rules, the deadline).
 */
export const AUDIT_CHANNELS = ['api', 'cli', 'console', 'link', 'policy', 'timeout'] as const;
export type AuditChannel = (typeof AUDIT_CHANNELS)[number];
/** The header a client names itself in (values: the channels a person uses). */
export const CHANNEL_HEADER = 'x-svc-channel';

const AUDIT_ACTIONS = [
  'decision',
  'rule_added',
  'session_started',
  'session_stopped',
  'workspace_pushed',
  'pull_request_opened',
  'terminal_opened',
  'access_changed',
  'vote',
  'escalated',
  'rule_revoked',
] as const;

/**
 * What one audit record says, before the chain places it (`seq`, `prev_hash`, `hash`); also the body
 * of `svc.rpc.control.audit.append`, a fact another service witnessed (the session service:
 * sessions started and stopped).
 */
export const AuditFactsSchema = Type.Object(
  {
    /** Stable per fact (a decision: `decision:<worker>:<request>`): recorded once however often it is reported. */
    id: Type.String({ minLength: 1, maxLength: 512 }),
    at: Timestamp,
    /** Who: a user's `sub`, or `policy` / `policy:timeout`. */
    actor: Type.String({ minLength: 1, maxLength: 256 }),
    channel: Type.Enum(AUDIT_CHANNELS),
    action: Type.Enum(AUDIT_ACTIONS),
    worker_id: Type.Optional(WorkerId),
    session_id: Type.Optional(SessionId),
    request_id: Type.Optional(Type.String({ maxLength: 256 })),
    decision: Type.Optional(DecisionSchema),
    /** SHA-256 (hex) of the request's tool and input (`actionHash`): exactly which action was decided. */
    action_hash: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' })),
    /** The rest worth keeping (the tool's name, a rule's pattern, a template). */
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
export type AuditFacts = Static<typeof AuditFactsSchema>;

const Hash = Type.String({ pattern: '^[0-9a-f]{64}$' });
/** Names a key without revealing it (`AuditKey.id`). */
const KeyId = Type.String({ pattern: '^[0-9a-f]{16}$' });

/**
 * One record of the chain: its facts, its place, the hash of the record before it and its own.
 * `hash` is an HMAC with the key `key_id` names (a key outside the database); a record written
 * before the trail had a key has no `key_id`, and its `hash` is a plain SHA-256 (docs/audit.md).
 */
const AuditRecordSchema = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    ...AuditFactsSchema.properties,
    key_id: Type.Optional(KeyId),
    prev_hash: Hash,
    hash: Hash,
  },
  { additionalProperties: false, title: 'AuditRecord' },
);
export type AuditRecord = Static<typeof AuditRecordSchema>;

/** The chain's first `prev_hash`. */
export const AUDIT_GENESIS_HASH = '0'.repeat(64);

/** `GET /v1/audit`: records after a sequence number, in order, filtered. */
export const ListAuditQuery = Type.Object({
  after_seq: Type.Optional(Type.Integer({ minimum: 0, description: 'Records after this one (default 0: from the first).' })),
  limit: Type.Integer({ minimum: 1, maximum: 10_000, default: 100, description: 'Page size, 1-10000 (default 100).' }),
  actor: Type.Optional(Type.String({ maxLength: 256 })),
  action: Type.Optional(Type.Enum(AUDIT_ACTIONS)),
  channel: Type.Optional(Type.Enum(AUDIT_CHANNELS)),
  worker_id: Type.Optional(WorkerId),
  format: Type.Optional(Type.Enum(['json', 'jsonl'] as const, { description: '`jsonl`: one record per line (application/x-ndjson), for export.' })),
});
export const ListAuditResponse = ListResponse(AuditRecordSchema);

/**
 * The end of the chain as the control service saw it, published at an interval to JetStream
 * (`SVC_AUDIT_HEADS`, where nothing can be deleted): the records up to `seq` existed, the last
 * one with this hash. Deleting the newest records, or rewriting the chain under a head, no longer
 * matches a head published before.
 */
export const AuditHeadSchema = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    hash: Hash,
    key_id: Type.Optional(KeyId),
    /** The first keyed record: every record from it on must be keyed (an older one stripped of its key is named). */
    keyed_from: Type.Optional(Type.Integer({ minimum: 1 })),
    published_at: Timestamp,
    /** The control replica that published it. */
    instance: Type.String({ maxLength: 256 }),
  },
  { additionalProperties: false, title: 'AuditHead' },
);
export type AuditHead = Static<typeof AuditHeadSchema>;

/** What `svc audit verify` learns (`GET /v1/audit/verify`, `svc.rpc.control.audit.verify`). */
export const AuditVerificationSchema = Type.Object(
  {
    /** Every record checked, every published head found, and heads there to check against: nothing was changed or removed. */
    ok: Type.Boolean(),
    /** Records read, from #1 (to the first that failed). */
    count: Type.Integer({ minimum: 0 }),
    /** Of those, written before the trail had a key: their chain is checked, not a key. */
    unkeyed: Type.Integer({ minimum: 0 }),
    /** Published heads compared with the records. */
    heads: Type.Integer({ minimum: 0 }),
    /** The newest published head. */
    latest_head: Type.Optional(AuditHeadSchema),
    /** The first record that fails (or the first one missing), when one does; none when the heads are what is missing. */
    seq: Type.Optional(Type.Integer({ minimum: 1 })),
    /** Why it fails. */
    problem: Type.Optional(Type.String()),
  },
  { additionalProperties: false, title: 'AuditVerification' },
);
export type AuditVerification = Static<typeof AuditVerificationSchema>;

/** `svc.rpc.control.audit.list`. */
export const ListAuditRpc = Type.Object(
  {
    after_seq: Type.Integer({ minimum: 0 }),
    limit: Type.Integer({ minimum: 1, maximum: 10_000 }),
    actor: Type.Optional(Type.String()),
    action: Type.Optional(Type.Enum(AUDIT_ACTIONS)),
    channel: Type.Optional(Type.Enum(AUDIT_CHANNELS)),
    worker_id: Type.Optional(WorkerId),
  },
  { additionalProperties: false },
);
export type ListAuditRpcType = Static<typeof ListAuditRpc>;
/** `svc.rpc.control.audit.verify`: the whole chain, checked by the service that holds the key. */
export const VerifyAuditRpc = Type.Object({}, { additionalProperties: false });

/** JSON with its object keys sorted at every depth: one text per value, whoever writes it. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((byte) => byte.toString(16).padStart(2, '0')).join('');

async function sha256Hex(text: string): Promise<string> {
  return hex(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/** Which action a decision was about: SHA-256 of the request's tool and input (canonical JSON). */
export function actionHash(toolName: string, input: unknown): Promise<string> {
  return sha256Hex(canonicalJson({ tool_name: toolName, input }));
}

/** `SVC_AUDIT_KEY` has at least this many characters (`openssl rand -base64 32` gives 44). */
export const AUDIT_KEY_MIN_LENGTH = 32;

/** WebCrypto's key (spelled through `globalThis.crypto`: this lib runs in browsers too). */
type HmacKey = Awaited<ReturnType<typeof globalThis.crypto.subtle.importKey>>;

/** A key the chain is sealed with: its HMAC key and the id records name it by. */
export interface AuditKey {
  /** 16 hex digits derived from the key: names it in records and heads, reveals nothing of it. */
  readonly id: string;
  readonly hmac: HmacKey;
}

/** The key `SVC_AUDIT_KEY` (its UTF-8 bytes) names, ready to seal and check records. */
export async function importAuditKey(secret: string): Promise<AuditKey> {
  if (secret.length < AUDIT_KEY_MIN_LENGTH) throw new RangeError(`an audit key needs at least ${AUDIT_KEY_MIN_LENGTH} characters`);
  const hmac = await globalThis.crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const id = (await hmacHex(hmac, 'svc audit key id')).slice(0, 16);
  return { id, hmac };
}

async function hmacHex(key: HmacKey, text: string): Promise<string> {
  return hex(await globalThis.crypto.subtle.sign('HMAC', key, new TextEncoder().encode(text)));
}

/**
 * A record's hash before the trail had a key: SHA-256 of the hash before it and the record's own
 * content (every field but `hash`, canonical JSON). Anyone can recompute it, so it proves only
 * that the chain agrees with itself.
 */
export function auditRecordHash(record: Omit<AuditRecord, 'hash'>): Promise<string> {
  return sha256Hex(`${record.prev_hash}\n${canonicalJson(record)}`);
}

/**
 * A keyed record's hash: HMAC-SHA-256, with the key its `key_id` names, of the same text as
 * `auditRecordHash`. Without the key nobody can make one, so a record rewritten in the database
 * (and every hash after it recomputed) no longer verifies.
 */
export function auditRecordMac(record: Omit<AuditRecord, 'hash'>, key: AuditKey): Promise<string> {
  if (record.key_id !== key.id) throw new RangeError(`record #${record.seq} names key ${record.key_id ?? '(none)'}, not ${key.id}`);
  return hmacHex(key.hmac, `${record.prev_hash}\n${canonicalJson(record)}`);
}

export interface VerifyAuditOptions {
  /** The keys records may name: the current one and those before it. */
  keys?: readonly AuditKey[];
  /**
   * What the heads stream holds: every head published so far (each must be a record of the
   * chain), or `missing` when the stream is not there. A trail with records and no head fails,
   * and so does a missing stream: nothing outside the database would say where the trail ended
   * or where keying began. Left out, the chain is checked on its own (the store's tests).
   */
  heads?: readonly AuditHead[] | 'missing';
}

/**
 * Checks a chain read in order from #1 and says which record first fails: a gap in `seq`, a
 * record not following the one before it, a hash (or HMAC) that does not match its content, an
 * unkeyed record after a keyed one (a rewrite by someone without the key), a record that is not
 * the head published for its place, or a published head beyond the chain's end (the newest
 * records deleted). A chain whose records all pass still fails without heads to hold it to (the
 * stream missing, or no head for a trail that has records): a chain whose keys were all
 * stripped, or whose newest records were deleted, agrees with itself (docs/audit.md).
 */
export async function verifyAuditChain(
  records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>,
  options: VerifyAuditOptions = {},
): Promise<AuditVerification> {
  const keys = new Map((options.keys ?? []).map((key) => [key.id, key]));
  const heads = options.heads === 'missing' ? [] : (options.heads ?? []);
  const headsAt = new Map<number, AuditHead[]>();
  for (const head of heads) headsAt.set(head.seq, [...(headsAt.get(head.seq) ?? []), head]);
  const latestHead = heads.reduce<AuditHead | undefined>((latest, head) => (latest && latest.seq >= head.seq ? latest : head), undefined);
  // Where the trail was keyed from, as published: stripping the key off every record from there on does not pass.
  let firstKeyed = heads.reduce<number | undefined>(
    (first, head) => (head.keyed_from === undefined ? first : Math.min(first ?? Infinity, head.keyed_from)),
    undefined,
  );
  let previous: AuditRecord | undefined;
  let count = 0;
  let unkeyed = 0;
  const result = (problem?: { seq?: number; problem: string }): AuditVerification => ({
    ok: problem === undefined,
    count,
    unkeyed,
    heads: heads.length,
    ...(latestHead ? { latest_head: latestHead } : {}),
    ...problem,
  });

  for await (const record of records) {
    count++;
    const { seq } = record;
    const expectedSeq = (previous?.seq ?? 0) + 1;
    if (seq !== expectedSeq) return result({ seq: expectedSeq, problem: `record #${expectedSeq} is missing (the next one is #${seq})` });
    if (record.prev_hash !== (previous?.hash ?? AUDIT_GENESIS_HASH))
      return result({ seq, problem: `record #${seq} does not follow the hash of #${seq - 1}: one of them was changed` });
    const { hash, ...content } = record;
    if (record.key_id === undefined) {
      if (firstKeyed !== undefined && seq >= firstKeyed)
        return result({ seq, problem: `record #${seq} has no key although the trail is keyed from #${firstKeyed}: it was rewritten without the key` });
      if ((await auditRecordHash(content)) !== hash)
        return result({ seq, problem: `record #${seq} was changed after it was written: its hash does not match its content` });
      unkeyed++;
    } else {
      firstKeyed = Math.min(firstKeyed ?? seq, seq);
      const key = keys.get(record.key_id);
      if (!key) return result({ seq, problem: `record #${seq} names key ${record.key_id}, which is not this service's: it cannot be checked (SVC_AUDIT_KEY)` });
      if ((await auditRecordMac(content, key)) !== hash)
        return result({ seq, problem: `record #${seq} was changed after it was written: its HMAC does not match its content` });
    }
    const published = headsAt.get(seq)?.find((head) => head.hash !== hash);
    if (published)
      return result({
        seq,
        problem: `record #${seq} is not the one published as the head at ${published.published_at}: the chain was rewritten from here or before`,
      });
    previous = record;
  }
  const end = previous?.seq ?? 0;
  if (latestHead && latestHead.seq > end)
    return result({
      seq: end + 1,
      problem: `the head published at ${latestHead.published_at} (#${latestHead.seq}) is missing: the chain ends at #${end}, records #${end + 1}-#${latestHead.seq} were deleted`,
    });
  if (options.heads === 'missing')
    return result({
      problem: `no published head: the heads stream ${streams.auditHeads.name} is missing (deleted: the services make it at start, and only NATS's operator may delete it), so nothing outside the database says where the trail ended or where keying began; the trail cannot be checked against it`,
    });
  if (options.heads !== undefined && heads.length === 0 && end > 0)
    return result({
      problem: `no published head: the heads stream ${streams.auditHeads.name} holds none, although the trail has ${end} record${end === 1 ? '' : 's'}; the trail cannot be checked against it`,
    });
  return result();
}
