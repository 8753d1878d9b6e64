import type { Kysely, Selectable } from 'kysely';
import type { EventType, IncomingEvent, StoredEvent } from '@svc/protocol';
import type { Database, EventsTable } from './schema.js';

/** One appended event: as stored, and whether it was stored before (same uid). */
export interface AppendResult {
  event: StoredEvent;
  duplicate: boolean;
}

export interface ListOptions {
  /** Events with an id greater than this ("0" for all). */
  afterId: string;
  limit: number;
  /** Keep only these types; all when omitted or empty. */
  types?: readonly EventType[] | undefined;
}

export interface EventStore {
  /**
   * Stores events of one worker in the given order, giving each the worker's next id
   * (1, 2, 3 … without holes). An event whose uid is already stored is not stored again:
   * its result is the stored event, marked `duplicate`. Everything commits together or not at all.
   */
  append(workerId: string, events: readonly IncomingEvent[]): Promise<AppendResult[]>;
  /** Events after `afterId` in id order. Never skips an event that a later call could return. */
  list(workerId: string, options: ListOptions): Promise<StoredEvent[]>;
  /** How many events (of the given types) the worker has. */
  count(workerId: string, types?: readonly EventType[]): Promise<number>;
  /** The worker's highest id, "0" when it has none. */
  lastId(workerId: string): Promise<string>;
}

type EventRow = Selectable<EventsTable>;

function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    worker_id: row.worker_id,
    type: row.type,
    uid: row.uid,
    ts: row.ts.toISOString(),
    data: row.data,
  } as StoredEvent;
}

/** The event store over a Kysely database (Postgres or PGlite). */
export function createEventStore(db: Kysely<Database>): EventStore {
  return {
    async append(workerId, events) {
      if (events.length === 0) return [];
      return db.transaction().execute(async (trx) => {
        // Upserting the worker's head row takes its row lock until commit: concurrent appenders of
        // one worker queue here, so ids are handed out, and become visible, strictly in order.
        const head = await trx
          .insertInto('event_streams')
          .values({ worker_id: workerId })
          .onConflict((conflict) => conflict.column('worker_id').doUpdateSet({ worker_id: (eb) => eb.ref('excluded.worker_id') }))
          .returning('last_id')
          .executeTakeFirstOrThrow();

        const uids = [...new Set(events.map((event) => event.uid))];
        const storedBefore = await trx.selectFrom('events').selectAll().where('worker_id', '=', workerId).where('uid', 'in', uids).execute();
        const byUid = new Map<string, StoredEvent>(storedBefore.map((row) => [row.uid, toStoredEvent(row)]));

        let lastId = BigInt(head.last_id);
        const results: AppendResult[] = [];
        const rows: Array<{ worker_id: string; id: string; uid: string; type: string; ts: string; data: string }> = [];
        for (const incoming of events) {
          const known = byUid.get(incoming.uid);
          if (known) {
            results.push({ event: known, duplicate: true });
            continue;
          }
          lastId += 1n;
          const stored = {
            id: lastId.toString(),
            worker_id: workerId,
            type: incoming.type,
            uid: incoming.uid,
            ts: new Date(incoming.ts).toISOString(),
            data: incoming.data,
          } as StoredEvent;
          byUid.set(incoming.uid, stored);
          results.push({ event: stored, duplicate: false });
          rows.push({ worker_id: workerId, id: stored.id, uid: stored.uid, type: stored.type, ts: stored.ts, data: JSON.stringify(stored.data) });
        }

        if (rows.length > 0) {
          await trx.insertInto('events').values(rows).execute();
          await trx.updateTable('event_streams').set({ last_id: lastId.toString() }).where('worker_id', '=', workerId).execute();
        }
        return results;
      });
    },

    async list(workerId, options) {
      let query = db
        .selectFrom('events')
        .selectAll()
        .where('worker_id', '=', workerId)
        .where('id', '>', options.afterId as never)
        .orderBy('id')
        .limit(options.limit);
      if (options.types && options.types.length > 0) query = query.where('type', 'in', [...options.types]);
      return (await query.execute()).map(toStoredEvent);
    },

    async count(workerId, types) {
      let query = db.selectFrom('events').select((eb) => eb.fn.countAll<string>().as('count')).where('worker_id', '=', workerId);
      if (types && types.length > 0) query = query.where('type', 'in', [...types]);
      const row = await query.executeTakeFirstOrThrow();
      return Number(row.count);
    },

    async lastId(workerId) {
      const row = await db.selectFrom('event_streams').select('last_id').where('worker_id', '=', workerId).executeTakeFirst();
      return row?.last_id ?? '0';
    },
  };
}
