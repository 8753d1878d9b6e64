import Type, { type Static } from 'typebox';
import { SessionId, Timestamp, WorkerId } from './primitives.js';
import { DecisionSchema } from './events.js';
import { ListResponse } from './lists.js';

/**
 * How a person reached svc: the CLI and the console say so in `X-Svc-Channel`; anything else is
 * the API. `link` is a signed link from a notification; `policy` and `timeout` decide by
 * themselves (the sidecar's rules, the deadline).
 */
export const AUDIT_CHANNELS = ['api', 'cli', 'console', 'link', 'policy', 'timeout'] as const;
export type AuditChannel = (typeof AUDIT_CHANNELS)[number];
/** The header a client names itself in (values: the channels a person uses). */
export const CHANNEL_HEADER = 'x-svc-channel';

export const AUDIT_ACTIONS = ['decision', 'rule_added', 'session_started', 'session_stopped'] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What one audit record says, before the chain places it (`seq`, `prev_hash`, `hash`). */
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

/** One record of the chain: its facts, its place, the hash of the record before it and its own. */
export const AuditRecordSchema = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    ...AuditFactsSchema.properties,
    prev_hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
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
export type ListAuditQueryType = Static<typeof ListAuditQuery>;
export const ListAuditResponse = ListResponse(AuditRecordSchema);

/** `svc.rpc.control.audit.append`: a fact another service witnessed (the session service: sessions started and stopped). */
export const AppendAuditRpc = AuditFactsSchema;
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

async function sha256Hex(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Which action a decision was about: SHA-256 of the request's tool and input (canonical JSON). */
export function actionHash(toolName: string, input: unknown): Promise<string> {
  return sha256Hex(canonicalJson({ tool_name: toolName, input }));
}

/**
 * A record's hash: SHA-256 of the hash before it and the record's own content (every field but
 * `hash`, canonical JSON). Editing a record changes its hash; removing one breaks the next
 * record's `prev_hash`; `svc audit verify` recomputes both.
 */
export function auditRecordHash(record: Omit<AuditRecord, 'hash'>): Promise<string> {
  return sha256Hex(`${record.prev_hash}\n${canonicalJson(record)}`);
}

/** Where a chain read in order (from seq 1) is broken: the first record that is not what the chain says, and why. */
export async function verifyAuditChain(
  records: AsyncIterable<AuditRecord> | Iterable<AuditRecord>,
): Promise<{ ok: true; count: number } | { ok: false; count: number; seq: number; problem: string }> {
  let previous: AuditRecord | undefined;
  let count = 0;
  for await (const record of records) {
    count++;
    const expectedSeq = (previous?.seq ?? 0) + 1;
    if (record.seq !== expectedSeq) return { ok: false, count, seq: record.seq, problem: `record #${expectedSeq} is missing (the next one is #${record.seq})` };
    if (record.prev_hash !== (previous?.hash ?? AUDIT_GENESIS_HASH))
      return { ok: false, count, seq: record.seq, problem: `record #${record.seq} does not follow the hash of #${record.seq - 1}: one of them was changed` };
    const { hash, ...content } = record;
    if ((await auditRecordHash(content)) !== hash)
      return { ok: false, count, seq: record.seq, problem: `record #${record.seq} was changed after it was written: its hash does not match its content` };
    previous = record;
  }
  return { ok: true, count };
}
