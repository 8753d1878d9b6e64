import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import { SYSTEM_SUBTYPES, WORKER_SOURCE, type EventSource, type EventType, type IncomingEvent, type SourcedEvent, type StoredEvent } from '@svc/protocol';
import { decideInLog, type DecideOutcome } from './control-requests.js';
import type { Database, EventsTable } from './schema.js';
import { toJsonb } from './jsonb.js';

/** One appended event: as stored, and whether it was stored before (same uid). */
export interface AppendResult {
  event: StoredEvent;
  duplicate: boolean;
}

interface ListOptions {
  /** Events with an id greater than this ("0" for all). */
  afterId: string;
  /** Only events with an id smaller than this ("end": no bound); the page is then the `limit` newest of them. */
  beforeId?: string | undefined;
  limit: number;
  /** Keep only these types; all when omitted or empty. */
  types?: readonly EventType[] | undefined;
  /** Keep only what the sidecar hands to the agent: decisions, people's messages and interrupts (`types` then unused). */
  agentInput?: boolean | undefined;
}

/** Which of a worker's events a count or a page takes. */
type EventSelection = Pick<ListOptions, 'types' | 'agentInput'>;

/** An event to append, with who wrote it (the worker, when not said). */
export type EventToAppend = IncomingEvent & { source?: EventSource | undefined };

/** Events of one worker, to append in this order. */
export interface WorkerEvents {
  workerId: string;
  events: readonly EventToAppend[];
}

export interface EventStore {
  /**
   * Stores events of one worker in the given order, giving each the worker's next id
   * (1, 2, 3 … without holes). An event whose uid is already stored is not stored again:
   * its result is the stored event, marked `duplicate`. Everything commits together or not at all.
   */
  append(workerId: string, events: readonly EventToAppend[]): Promise<AppendResult[]>;
  /**
   * `append` for several workers in one round trip and one transaction (one commit for all):
   * the results in the order of `batches`. Each worker must appear once.
   */
  appendMany(batches: readonly WorkerEvents[]): Promise<AppendResult[][]>;
  /**
   * A person's decision on `requestId`, checked against the request under the worker's lock and
   * appended in one transaction (`svc_decide`): the first decision wins.
   */
  decide(workerId: string, requestId: string, timeoutS: number, decision: SourcedEvent): Promise<DecideOutcome>;
  /** Events after `afterId` in id order. Never skips an event that a later call could return. */
  list(workerId: string, options: ListOptions): Promise<StoredEvent[]>;
  /** How many events (of the given selection) the worker has. */
  count(workerId: string, selection?: EventSelection): Promise<number>;
  /** The worker's highest id, "0" when it has none. */
  lastId(workerId: string): Promise<string>;
  /** `count` and `lastId` as one statement, so seen at one moment. */
  head(workerId: string, selection?: EventSelection): Promise<{ total: number; lastId: string }>;
  /**
   * Deletes every event of the worker, oldest first, `batchSize` at a time, each batch its own
   * short statement (never one long transaction holding locks and WAL), pausing `pauseMs`
   * between batches so appends keep their pace. The head stays: ids are never handed out
   * twice. Resolves with how many it deleted.
   */
  purge(workerId: string, options?: { batchSize?: number; pauseMs?: number }): Promise<number>;
}

type EventRow = Omit<Selectable<EventsTable>, 'stored_at'>;

function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    worker_id: row.worker_id,
    type: row.type,
    uid: row.uid,
    ts: row.ts.toISOString(),
    data: row.data,
    source: (row.source ?? WORKER_SOURCE) as EventSource,
  } as StoredEvent;
}

/** Matches what the database answered for one worker to the events it was given. */
function resultsOf(workerId: string, events: readonly EventToAppend[], rows: ReadonlyArray<EventRow & { known: boolean }>): AppendResult[] {
  const known = new Map<string, StoredEvent>();
  const newIds = new Map<string, string>();
  for (const row of rows) {
    if (row.known) known.set(row.uid, toStoredEvent(row));
    else newIds.set(row.uid, row.id);
  }
  const answered = new Set<string>();
  return events.map((incoming) => {
    // Only the first occurrence of a uid that was not stored before is a new event.
    const duplicate = known.has(incoming.uid) || answered.has(incoming.uid);
    answered.add(incoming.uid);
    const stored = known.get(incoming.uid);
    if (stored) return { event: stored, duplicate };
    const id = newIds.get(incoming.uid);
    if (id === undefined) throw new Error(`svc_append_many returned no row for uid ${incoming.uid} of ${workerId}`);
    const event = {
      id,
      worker_id: workerId,
      type: incoming.type,
      uid: incoming.uid,
      ts: new Date(incoming.ts).toISOString(),
      data: incoming.data,
      source: incoming.source ?? WORKER_SOURCE,
    } as StoredEvent;
    return { event, duplicate };
  });
}

/** A query of the events table narrowed to a selection. */
function selected<Query extends SelectQueryBuilder<Database, 'events', object>>(query: Query, selection: EventSelection): Query {
  if (selection.agentInput)
    return query.where(
      // A person's message, interrupt, terminal or changes request by its source too: a worker's event of that subtype stored before it was reserved is none.
      sql<boolean>`(type = 'control_response' OR (type = 'system' AND data->>'subtype' IN (${SYSTEM_SUBTYPES.personMessage}, ${SYSTEM_SUBTYPES.personInterrupt}, ${SYSTEM_SUBTYPES.terminalRequested}, ${SYSTEM_SUBTYPES.changesRequested}) AND source LIKE 'user:%'))`,
    ) as Query;
  return (selection.types && selection.types.length > 0 ? query.where('type', 'in', [...selection.types]) : query) as Query;
}

/** How many of a worker's events a selection takes, as a query. */
function counted(db: Kysely<Database>, workerId: string, selection: EventSelection = {}) {
  return selected(
    db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('worker_id', '=', workerId),
    selection,
  );
}

/** The event store over a Kysely database (Postgres or PGlite). */
export function createEventStore(db: Kysely<Database>): EventStore {
  async function appendMany(batches: readonly WorkerEvents[]): Promise<AppendResult[][]> {
    const listed = new Set<string>();
    for (const { workerId } of batches) {
      if (listed.has(workerId)) throw new Error(`appendMany: worker ${workerId} is listed twice; give each worker one batch`);
      listed.add(workerId);
    }
    const nonEmpty = batches.filter((batch) => batch.events.length > 0);
    if (nonEmpty.length === 0) return batches.map(() => []);
    // One round trip: svc_append_events locks the worker's head row, skips known uids and hands
    // out the next ids; svc_append_many does the same for every worker of the call at once, in
    // one transaction (the migrations say why).
    const given = nonEmpty.map(({ workerId, events }) => ({
      worker_id: workerId,
      events: events.map(({ uid, type, ts, data, source }) => ({ uid, type, ts, data, source: source ?? WORKER_SOURCE })),
    }));
    // One worker goes straight to svc_append_events, the simpler plan (the first svc_append_many,
    // a loop over svc_append_events, slowed a single-worker append on PGlite: docs/benchmarks.md#store-append).
    const single = given.length === 1 ? given[0]! : undefined;
    // What is stored is what is answered: a character Postgres refuses is replaced in both (jsonb.ts).
    const stored = single ? toJsonb(single.events) : toJsonb(given);
    const payload = single ? [{ worker_id: single.worker_id, events: stored.value as typeof single.events }] : (stored.value as typeof given);
    const { rows } = single
      ? await sql<EventRow & { known: boolean }>`
          SELECT ${single.worker_id}::text AS worker_id, id, uid, type, ts, data, known, source FROM svc_append_events(${single.worker_id}, ${stored.text}::jsonb)`.execute(
          db,
        )
      : await sql<EventRow & { known: boolean }>`
          SELECT worker_id, id, uid, type, ts, data, known, source FROM svc_append_many(${stored.text}::jsonb)`.execute(db);
    const rowsByWorker = new Map<string, Array<EventRow & { known: boolean }>>();
    for (const row of rows) {
      const list = rowsByWorker.get(row.worker_id) ?? [];
      list.push(row);
      rowsByWorker.set(row.worker_id, list);
    }
    const storedEvents = new Map(payload.map(({ worker_id: workerId, events }) => [workerId, events as readonly EventToAppend[]]));
    return batches.map(({ workerId, events }) => resultsOf(workerId, storedEvents.get(workerId) ?? events, rowsByWorker.get(workerId) ?? []));
  }

  return {
    decide: (workerId, requestId, timeoutS, decision) => decideInLog(db, workerId, requestId, timeoutS, decision),
    appendMany,
    async append(workerId, events) {
      return (await appendMany([{ workerId, events }]))[0]!;
    },

    async list(workerId, options) {
      const backwards = options.beforeId !== undefined;
      let query = db
        .selectFrom('events')
        .selectAll()
        .where('worker_id', '=', workerId)
        .where('id', '>', options.afterId as never)
        .orderBy('id', backwards ? 'desc' : 'asc')
        .limit(options.limit);
      if (backwards && options.beforeId !== 'end') query = query.where('id', '<', options.beforeId as never);
      const rows = (await selected(query, options).execute()).map(toStoredEvent);
      // Read newest first along the index, handed out in id order.
      return backwards ? rows.reverse() : rows;
    },

    async count(workerId, selection) {
      const row = await counted(db, workerId, selection).executeTakeFirstOrThrow();
      return Number(row.count);
    },

    async head(workerId, selection) {
      const row = await db
        .selectNoFrom((eb) => [
          eb.selectFrom('event_streams').select('last_id').where('worker_id', '=', workerId).as('last_id'),
          counted(db, workerId, selection).as('total'),
        ])
        .executeTakeFirstOrThrow();
      return { total: Number(row.total ?? 0), lastId: row.last_id ?? '0' };
    },

    async lastId(workerId) {
      const row = await db.selectFrom('event_streams').select('last_id').where('worker_id', '=', workerId).executeTakeFirst();
      return row?.last_id ?? '0';
    },

    async purge(workerId, { batchSize = 1000, pauseMs = 0 } = {}) {
      let deleted = 0;
      for (;;) {
        // A range of the primary key (worker_id, id): each batch reads and locks only its rows.
        const oldest = db.selectFrom('events').select('id').where('worker_id', '=', workerId).orderBy('id').limit(batchSize);
        const result = await db.deleteFrom('events').where('worker_id', '=', workerId).where('id', 'in', oldest).executeTakeFirst();
        const count = Number(result.numDeletedRows);
        deleted += count;
        if (count < batchSize) return deleted;
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs));
      }
    },
  };
}
