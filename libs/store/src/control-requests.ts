import { sql, type Kysely, type RawBuilder } from 'kysely';
import {
  CONTROL_WITHDRAWN_SUBTYPE,
  parseSource,
  WORKER_SOURCE,
  type EventData,
  type EventSource,
  type PermissionRule,
  type SourcedEvent,
  type StoredEvent,
} from '@svc/protocol';
import type { Database } from './schema.js';
import { jsonb } from './jsonb.js';

/** A control request as stored, with when it was stored (its deadline counts from then). */
export interface StoredRequest {
  event: StoredEvent<'control_request'>;
  storedAt: Date;
}

export type RequestState = 'open' | 'closed' | 'all';

interface EventRow {
  worker_id: string;
  id: string;
  uid: string;
  type: string;
  ts: Date;
  stored_at: Date;
  data: unknown;
  source: string | null;
}

function toStored(row: EventRow): StoredRequest {
  return {
    event: {
      id: row.id,
      worker_id: row.worker_id,
      type: 'control_request',
      uid: row.uid,
      ts: row.ts.toISOString(),
      data: row.data,
      source: (row.source ?? WORKER_SOURCE) as EventSource,
    } as StoredEvent<'control_request'>,
    storedAt: row.stored_at,
  };
}

/** A decision as the queries build it in JSON (`ts` is a timestamp's JSON text). */
interface DecisionJson {
  id: string;
  uid: string;
  ts: string;
  data: unknown;
  source: string | null;
}

/** A request as `svc_decide` returns it. */
interface RequestJson extends DecisionJson {
  stored_at: string;
}

function toDecision(workerId: string, row: DecisionJson): StoredEvent<'control_response'> {
  return {
    id: row.id,
    worker_id: workerId,
    type: 'control_response',
    uid: row.uid,
    ts: new Date(row.ts).toISOString(),
    data: row.data,
    source: (row.source ?? WORKER_SOURCE) as EventSource,
  } as StoredEvent<'control_response'>;
}

/** What `decide` found, in the order the API reports it. */
export type DecideOutcome =
  | { kind: 'not_found' }
  | { kind: 'withdrawn' | 'expired'; request: StoredRequest }
  | { kind: 'decided' | 'stored'; request: StoredRequest; decision: StoredEvent<'control_response'> };

// A request is open while it has no decision and no withdrawal. A decision is any
// `control_response` on it: a person's or the deadline's (stored by the control service under
// `control_response:<request_id>`), or the sidecar's own policy decision (posted as an event).
const decided = sql`EXISTS (SELECT 1 FROM events d WHERE d.worker_id = r.worker_id AND d.type = 'control_response' AND d.data->>'request_id' = r.data->>'request_id')`;
const firstDecision = sql`(SELECT json_build_object('id', d.id::text, 'uid', d.uid, 'ts', d.ts, 'data', d.data, 'source', d.source) FROM events d
  WHERE d.worker_id = r.worker_id AND d.type = 'control_response' AND d.data->>'request_id' = r.data->>'request_id' ORDER BY d.id LIMIT 1)`;
// A control_request under an id an earlier one of the worker's already has.
const repeated = sql`EXISTS (SELECT 1 FROM events p WHERE p.worker_id = r.worker_id AND p.type = 'control_request' AND p.data->>'request_id' = r.data->>'request_id' AND p.id < r.id)`;
const withdrawn = sql`EXISTS (SELECT 1 FROM events w WHERE w.worker_id = r.worker_id AND w.type = 'system' AND w.data->>'subtype' = ${CONTROL_WITHDRAWN_SUBTYPE} AND (w.data->'details')->>'request_id' = r.data->>'request_id')`;

/**
 * The event log's control requests, as the control service reads them: a request with its
 * decision or withdrawal, the requests of a worker by state, the rules people added. Every read is an index lookup (migration 2026-11-22T1000-control).
 */
export function createControlRequestLog(db: Kysely<Database>) {
  return {
    /**
     * The worker's `control_request` with this `request_id` (the first, if the agent repeated
     * it), whether the agent withdrew it, and its first decision if it has one: one query,
     * since deciding needs all three.
     */
    async findRequest(
      workerId: string,
      requestId: string,
    ): Promise<(StoredRequest & { withdrawn: boolean; decision: StoredEvent<'control_response'> | undefined }) | undefined> {
      const { rows } = await sql<EventRow & { withdrawn: boolean; decision: DecisionJson | null }>`
        SELECT r.worker_id, r.id, r.uid, r.type, r.ts, r.stored_at, r.data, r.source, ${withdrawn} AS withdrawn, ${firstDecision} AS decision FROM events r
        WHERE r.worker_id = ${workerId} AND r.type = 'control_request' AND r.data->>'request_id' = ${requestId}
        ORDER BY r.id LIMIT 1`.execute(db);
      const row = rows[0];
      if (!row) return undefined;
      const decision = row.decision ? toDecision(workerId, row.decision) : undefined;
      return { ...toStored(row), withdrawn: row.withdrawn, decision };
    },

    /**
     * A worker's requests in one state, oldest first: the first request under each id only (a
     * decision applies to it; a repeat under the same id is not a request of its own).
     */
    async listRequests(workerId: string, state: RequestState): Promise<StoredRequest[]> {
      const filter = state === 'open' ? sql`AND NOT ${decided} AND NOT ${withdrawn}` : state === 'closed' ? sql`AND (${decided} OR ${withdrawn})` : sql``;
      const { rows } = await sql<EventRow>`
        SELECT r.worker_id, r.id, r.uid, r.type, r.ts, r.stored_at, r.data, r.source FROM events r
        WHERE r.worker_id = ${workerId} AND r.type = 'control_request' AND NOT ${repeated} ${filter}
        ORDER BY r.id`.execute(db);
      return rows.map(toStored);
    },

    /**
     * The newest `limit` requests of `workerIds` (the first under each id), each with its first
     * decision if it has one: what the policy's suggestions and replay read (docs/policy.md).
     */
    async requestHistory(
      workerIds: readonly string[],
      limit: number,
    ): Promise<Array<{ request: StoredEvent<'control_request'>; decision: StoredEvent<'control_response'> | undefined }>> {
      if (workerIds.length === 0) return [];
      const { rows } = await sql<EventRow & { decision: DecisionJson | null }>`
        SELECT r.worker_id, r.id, r.uid, r.type, r.ts, r.stored_at, r.data, r.source, ${firstDecision} AS decision FROM events r
        WHERE r.worker_id = ANY(${[...workerIds]}::text[]) AND r.type = 'control_request' AND NOT ${repeated}
        ORDER BY r.stored_at DESC, r.id DESC LIMIT ${limit}`.execute(db);
      return rows.map((row) => ({
        request: toStored(row).event,
        decision: row.decision ? toDecision(row.worker_id, row.decision) : undefined,
      }));
    },

    /** Every open request of every worker: what a starting control replica must keep deadlines for. */
    async allOpenRequests(): Promise<StoredRequest[]> {
      const { rows } = await sql<EventRow>`
        SELECT r.worker_id, r.id, r.uid, r.type, r.ts, r.stored_at, r.data, r.source FROM events r
        WHERE r.type = 'control_request' AND NOT ${repeated} AND NOT ${decided} AND NOT ${withdrawn}
        ORDER BY r.stored_at`.execute(db);
      return rows.map(toStored);
    },
  };
}

export type ControlRequestLog = ReturnType<typeof createControlRequestLog>;

/**
 * The rules people added with "always" (docs/teams.md, "Rules"), as the control service reads
 * them: each is a person's decision in the log; a revocation is the control service's own row.
 */
export function createRuleLog(db: Kysely<Database>) {
  /** Rules (people's "always" decisions, with their request's tool) where `condition` holds of the decision `d`, oldest first, or the newest `limit`. */
  async function rulesWhere(condition: RawBuilder<unknown>, limit?: number): Promise<PermissionRule[]> {
    const { rows } = await sql<{ id: string; worker_id: string; stored_at: Date; data: EventData<'control_response'>; source: string; tool_name: string }>`
      SELECT d.id, d.worker_id, d.stored_at, d.data, d.source, r.data->>'tool_name' AS tool_name FROM events d
      JOIN LATERAL (SELECT q.data FROM events q
        WHERE q.worker_id = d.worker_id AND q.type = 'control_request' AND q.data->>'request_id' = d.data->>'request_id' ORDER BY q.id LIMIT 1) r ON true
      WHERE d.type = 'control_response' AND d.data->>'scope' = 'always' AND d.source LIKE 'user:%' AND ${condition}
      ORDER BY d.id ${limit === undefined ? sql`` : sql`DESC LIMIT ${limit}`}`.execute(db);
    return rows.flatMap(({ id, worker_id: workerId, stored_at: storedAt, data, source, tool_name: toolName }) => {
      const person = parseSource(source);
      if (person.kind !== 'person') return [];
      return [
        {
          rule_id: id,
          tool_name: toolName,
          ...(data.input_pattern === undefined ? {} : { input_pattern: data.input_pattern }),
          decision: data.decision,
          added_by: person.sub,
          request_id: data.request_id,
          added_at: storedAt.toISOString(),
          scope: data.rule_scope ?? 'worker',
          ...(data.rule_key === undefined ? {} : { scope_key: data.rule_key }),
          worker_id: workerId,
        },
      ];
    });
  }

  return {
    /**
     * The worker's permission rules, oldest first: the decisions a person stored with
     * `scope: "always"` (their source is a person's, set by the control service: never an event
     * the worker posted), each for its request's tool — its own, and those given at a wider
     * scope whose `rule_key` is one of `keys` (its session's, template's, teams': docs/teams.md),
     * whichever worker they were given on — less the revoked. The decision's id is the rule's. A
     * decision stored before sources existed has none and makes no rule: it cannot be told from
     * one a worker forged (docs/protocol.md).
     */
    async permissionRules(workerId: string, keys: readonly string[] = []): Promise<PermissionRule[]> {
      return rulesWhere(sql`((d.worker_id = ${workerId} AND NOT d.data ? 'rule_key') OR (d.data ? 'rule_key' AND d.data->>'rule_key' = ANY(${[...keys]}::text[])))
        AND NOT EXISTS (SELECT 1 FROM rule_revocations v WHERE v.rule_id = d.id)`);
    },

    /** Every rule not revoked (the newest `limit`), for `GET /v1/rules`: the caller sees those it may (the control service filters). */
    async allRules(limit: number): Promise<PermissionRule[]> {
      return rulesWhere(sql`NOT EXISTS (SELECT 1 FROM rule_revocations v WHERE v.rule_id = d.id)`, limit);
    },

    /** One rule by its id (revoked or not). */
    async ruleById(ruleId: string): Promise<(PermissionRule & { revoked: boolean }) | undefined> {
      const [rule] = await rulesWhere(sql`d.id = ${ruleId}`);
      if (!rule) return undefined;
      const { rows } = await sql<{ one: number }>`SELECT 1 AS one FROM rule_revocations WHERE rule_id = ${ruleId}`.execute(db);
      return { ...rule, revoked: rows.length > 0 };
    },
  };
}

export type RuleLog = ReturnType<typeof createRuleLog>;

/**
 * Checks a person's decision and stores it, in one round trip: an append, so only the worker's
 * writer calls it, through `EventStore.decide` (`svc_decide`, migration
 * 2026-11-24T2330-rules-from-decisions): the request's state under the worker's lock, then
 * the append.
 */
export async function decideInLog(db: Kysely<Database>, workerId: string, requestId: string, timeoutS: number, decision: SourcedEvent): Promise<DecideOutcome> {
  const { rows } = await sql<{ outcome: DecideOutcome['kind']; request_row: RequestJson | null; decision_row: DecisionJson | null }>`
    SELECT outcome, request_row, decision_row FROM svc_decide(${workerId}, ${requestId}, ${timeoutS}, ${jsonb(decision)}::jsonb)`.execute(db);
  const { outcome, request_row: requestRow, decision_row: decisionRow } = rows[0]!;
  if (outcome === 'not_found' || !requestRow) return { kind: 'not_found' };
  const request = toStored({
    worker_id: workerId,
    type: 'control_request',
    ...requestRow,
    ts: new Date(requestRow.ts),
    stored_at: new Date(requestRow.stored_at),
  });
  if (outcome === 'withdrawn' || outcome === 'expired') return { kind: outcome, request };
  return { kind: outcome, request, decision: toDecision(workerId, decisionRow!) };
}
