import { isEndedStatus, principalsOf, type AccessEntry, type ListResponseOf, type Session, type CallerType, type WorkerStatus } from '@svc/protocol';
import { sql, type Database, type Kysely, type Selectable, type SessionsTable } from '@svc/store';
import type { SandboxHandle } from './sandbox/provider.js';

interface SessionRow {
  session: Session;
  /** Every principal its access list and its worker's approval routes name (who may see it). */
  principals: readonly string[];
  sandbox: SandboxHandle | undefined;
  hasSidecar: boolean;
}

/** A row as the table gives it (libs/store/src/schema.ts). */
type Row = Selectable<SessionsTable>;

function toSessionRow(row: Row): SessionRow {
  const session: Session = {
    id: row.id,
    worker_id: row.worker_id,
    template: row.template,
    status: row.status as WorkerStatus,
    owner: row.owner,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ...(row.ended_at ? { ended_at: row.ended_at.toISOString() } : {}),
    ...(row.failure ? { failure: row.failure as { step: string; reason: string } } : {}),
    ...((row.access as AccessEntry[]).length > 0 ? { access: row.access as AccessEntry[] } : {}),
  };
  return { session, principals: row.access_principals, sandbox: (row.sandbox ?? undefined) as SandboxHandle | undefined, hasSidecar: row.has_sidecar };
}

/** The `sessions` table: what the session API lists, and what the watchdog looks after. */
export function createSessionStore(db: Kysely<Database>) {
  return { ...sessionReads(db), ...sessionChanges(db) };
}

/**
 * Finding sessions: for a caller (their own, those shared with them or a group of theirs, or all
 * for an admin), a worker, the watchdog, retention.
 */
function sessionReads(db: Kysely<Database>) {
  const visibleTo = (caller: CallerType) =>
    caller.admin
      ? db.selectFrom('sessions')
      : db
          .selectFrom('sessions')
          .where((eb) => eb.or([eb('owner', '=', caller.sub), eb('access_principals', '&&', sql<string[]>`${principalsOf(caller)}::text[]`)]));

  return {
    async get(id: string, caller?: CallerType): Promise<SessionRow | undefined> {
      const query = caller ? visibleTo(caller) : db.selectFrom('sessions');
      const row = await query.selectAll().where('id', '=', id).executeTakeFirst();
      return row && toSessionRow(row);
    },

    async byWorker(workerId: string): Promise<SessionRow | undefined> {
      const row = await db.selectFrom('sessions').selectAll().where('worker_id', '=', workerId).executeTakeFirst();
      return row && toSessionRow(row);
    },

    /** Newest first; `total` counts every match. */
    async list(caller: CallerType, page: { limit: number; offset: number; status?: WorkerStatus | undefined }): Promise<ListResponseOf<Session>> {
      let query = visibleTo(caller);
      if (page.status) query = query.where('status', '=', page.status);
      const [rows, count] = await Promise.all([
        query.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(page.limit).offset(page.offset).execute(),
        query.select((eb) => eb.fn.countAll<string>().as('total')).executeTakeFirstOrThrow(),
      ]);
      return { items: rows.map((row) => toSessionRow(row).session), total: Number(count.total) };
    },

    /** How many sessions (each one worker) are in each status. */
    async countByStatus(): Promise<Array<{ status: WorkerStatus; count: number }>> {
      const rows = await db
        .selectFrom('sessions')
        .select(['status', (eb) => eb.fn.countAll<string>().as('count')])
        .groupBy('status')
        .execute();
      return rows.map((row) => ({ status: row.status as WorkerStatus, count: Number(row.count) }));
    },

    /** Sessions not ended yet (the watchdog's round). */
    async underWay(): Promise<SessionRow[]> {
      const rows = await db.selectFrom('sessions').selectAll().where('status', 'in', ['pending', 'provisioning', 'running']).execute();
      return rows.map(toSessionRow);
    },

    /**
     * Ended sessions whose events' retention is over at `now` and that still have them, oldest
     * end first: each one's own days, else `defaultDays`; 0 days keeps them.
     */
    async pastRetention(now: Date, defaultDays: number, limit: number): Promise<Array<{ id: string; worker_id: string }>> {
      const days = sql<number>`coalesce(events_retention_days, ${defaultDays})`;
      return db
        .selectFrom('sessions')
        .select(['id', 'worker_id'])
        .where('ended_at', 'is not', null)
        .where('events_purged_at', 'is', null)
        .where(days, '>', 0)
        .where('ended_at', '<', sql<Date>`${now}::timestamptz - make_interval(days => ${days})`)
        .orderBy('ended_at')
        .limit(limit)
        .execute();
    },
  };
}

/** An access list as its two columns: the list, and the principals it and the routes name. */
function accessColumns(access: readonly AccessEntry[], routePrincipals: readonly string[]) {
  return { access: JSON.stringify(access), access_principals: [...new Set([...access.map((entry) => entry.principal), ...routePrincipals])] };
}

/** Writing sessions: a new one, and what happens to it after. */
function sessionChanges(db: Kysely<Database>) {
  return {
    async insert(session: {
      id: string;
      worker_id: string;
      owner: string;
      template: string;
      has_sidecar: boolean;
      events_retention_days?: number | undefined;
      access: readonly AccessEntry[];
      /** The principals its worker's approval routes name: they may see it too. */
      routePrincipals: readonly string[];
    }): Promise<SessionRow> {
      const { access, routePrincipals, ...rest } = session;
      const row = await db
        .insertInto('sessions')
        .values({ ...rest, ...accessColumns(access, routePrincipals), status: 'pending' })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toSessionRow(row);
    },

    /** Replaces a session's access list (its routes' principals kept); resolves with the session as it is now. */
    async setAccess(id: string, access: readonly AccessEntry[], routePrincipals: readonly string[]): Promise<SessionRow | undefined> {
      const row = await db
        .updateTable('sessions')
        .set({ ...accessColumns(access, routePrincipals), updated_at: new Date() })
        .where('id', '=', id)
        .returningAll()
        .executeTakeFirst();
      return row && toSessionRow(row);
    },

    async markPurged(id: string, at: Date): Promise<void> {
      await db.updateTable('sessions').set({ events_purged_at: at }).where('id', '=', id).execute();
    },

    /** A spawn still under way says so: its `updated_at` is now (the watchdog fails a spawn that stops saying it). */
    async touchSpawn(id: string): Promise<void> {
      await db.updateTable('sessions').set({ updated_at: new Date() }).where('id', '=', id).where('status', 'in', ['pending', 'provisioning']).execute();
    },

    async setSandbox(id: string, sandbox: SandboxHandle): Promise<void> {
      await db
        .updateTable('sessions')
        .set({ sandbox: JSON.stringify(sandbox), updated_at: new Date() })
        .where('id', '=', id)
        .execute();
    },

    /**
     * Mirrors a status the worker registry has already changed (the registry's compare-and-set
     * decides; an ended row is never changed again).
     */
    async setStatus(id: string, status: WorkerStatus, failure?: { step: string; reason: string }): Promise<void> {
      const now = new Date();
      await db
        .updateTable('sessions')
        .set({ status, updated_at: now, ...(isEndedStatus(status) ? { ended_at: now } : {}), ...(failure ? { failure: JSON.stringify(failure) } : {}) })
        .where('id', '=', id)
        .where('status', 'not in', ['completed', 'failed', 'stopped'])
        .execute();
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
