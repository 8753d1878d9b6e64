import { Migrator, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlResponseUid, type IncomingEvent } from '@svc/protocol';
import { startPostgres, type PostgresProcess } from '@svc/test-support';
import { createRuleLog } from './control-requests.js';
import { openDatabase, type StoreDatabase } from './database.js';
import { createEventStore } from './event-store.js';
import { awaitMigrated, migrateToLatest, MigrationsPending } from './migrate.js';
import { migrationGroups } from './migrations/index.js';
import type { Database, Kysely } from './index.js';

/** Every migration as it was before they were grouped by owner (issue 21), in Kysely's default table. */
async function migrateAsBeforeTheGrouping(db: Kysely<Database>): Promise<void> {
  const {
    '2026-11-24T2330-rules-from-decisions': added,
    '2026-11-26T2100-event-sources': sources,
    '2026-11-27T1800-rule-keys': ruleKeys,
    ...eventLog
  } = migrationGroups['event-ingest'].migrations;
  expect([added, sources, ruleKeys].every(Boolean)).toBe(true);
  const { '2026-11-27T1600-session-access': access, ...sessions } = migrationGroups.session.migrations;
  expect(access).toBeDefined();
  const before = { ...eventLog, ...sessions };
  const { error } = await new Migrator({ db, provider: { getMigrations: () => Promise.resolve(before) } }).migrateToLatest();
  expect(error).toBeUndefined();
}

const tableExists = async (db: Kysely<Database>, table: string) =>
  (await sql<{ found: string | null }>`SELECT to_regclass(${table})::text AS found`.execute(db)).rows[0]!.found !== null;

function controlRequest(requestId: string, toolName: string): IncomingEvent {
  return { type: 'control_request', uid: `cr-${requestId}`, ts: new Date().toISOString(), data: { request_id: requestId, tool_name: toolName, input: {} } };
}

function decision(requestId: string, decidedBy: string, scope?: 'always'): IncomingEvent {
  const data = { request_id: requestId, decision: 'allow', decided_by: decidedBy, ...(scope ? { scope, input_pattern: 'npm *' } : {}) };
  return { type: 'control_response', uid: controlResponseUid(requestId), ts: new Date().toISOString(), data } as IncomingEvent;
}

describe('migrations — grouped by the service that owns the tables', () => {
  it("each owner applies its own group only; a reader of another's tables waits until they are migrated", async () => {
    const database = await openDatabase({});
    try {
      expect(await migrateToLatest(database.db, 'session')).toEqual([
        '2026-11-22T1200-sessions',
        '2026-11-25T1100-event-retention',
        '2026-11-27T1600-session-access',
      ]);
      expect(await tableExists(database.db, 'sessions')).toBe(true);
      expect(await tableExists(database.db, 'events')).toBe(false);
      const waiting = awaitMigrated(database.db, 'event-ingest');
      await expect(waiting).rejects.toBeInstanceOf(MigrationsPending);
      await expect(waiting).rejects.toThrow(/the event-ingest service.s tables are not migrated yet \(it applies 2026-11-22T0530-event-store, /);
      expect(await migrateToLatest(database.db, 'event-ingest')).toEqual(Object.keys(migrationGroups['event-ingest'].migrations));
      await expect(awaitMigrated(database.db, 'event-ingest')).resolves.toBeUndefined();
      expect(await migrateToLatest(database.db, 'session')).toEqual([]);
    } finally {
      await database.close();
    }
  });

  it('a database migrated before the grouping keeps what it has: applied migrations are not applied again; its "always" decisions, stored before sources, make no rule', async () => {
    const database = await openDatabase({});
    try {
      await migrateAsBeforeTheGrouping(database.db);
      // Appended as the store of then did (its functions knew no sources).
      await sql`SELECT * FROM svc_append_events('wrk_old', ${JSON.stringify([controlRequest('r1', 'Bash'), controlRequest('r2', 'Read')])}::jsonb)`.execute(
        database.db,
      );
      // As the control service decided then: the rule written beside the decision, in svc_decide.
      for (const [requestId, scope] of [
        ['r1', 'always'],
        ['r2', undefined],
      ] as const) {
        await sql`SELECT outcome FROM svc_decide('wrk_old', ${requestId}, 600, ${JSON.stringify(decision(requestId, 'alice', scope))}::jsonb, ${scope ? '{"input_pattern":"npm *"}' : null}::jsonb)`.execute(
          database.db,
        );
      }
      const { rows: oldRules } = await sql<{ tool_name: string; input_pattern: string; added_by: string; request_id: string }>`
        SELECT tool_name, input_pattern, added_by, request_id FROM permission_rules`.execute(database.db);
      expect(oldRules).toEqual([{ tool_name: 'Bash', input_pattern: 'npm *', added_by: 'alice', request_id: 'r1' }]);

      expect(await migrateToLatest(database.db, 'event-ingest')).toEqual([
        '2026-11-24T2330-rules-from-decisions',
        '2026-11-26T2100-event-sources',
        '2026-11-27T1800-rule-keys',
      ]);
      expect(await migrateToLatest(database.db, 'session')).toEqual(['2026-11-27T1600-session-access']);
      expect(await tableExists(database.db, 'permission_rules')).toBe(false);
      // The control service reads the rules (and keeps their revocations).
      await migrateToLatest(database.db, 'control');
      // The decision stays in the log, read as the worker's: nothing proves a person wrote it (a
      // worker could post one under that uid then), so it makes no rule (docs/protocol.md, "Sources").
      const [, , stored] = await createEventStore(database.db).list('wrk_old', { afterId: '0', limit: 10 });
      expect(stored).toMatchObject({ id: '3', type: 'control_response', source: 'worker', data: { scope: 'always', decided_by: 'alice' } });
      expect(await createRuleLog(database.db).permissionRules('wrk_old')).toEqual([]);
    } finally {
      await database.close();
    }
  });

  describe('on Postgres, with services starting together', () => {
    let postgres: PostgresProcess;
    let database: StoreDatabase;
    beforeAll(async () => {
      postgres = await startPostgres();
      database = await openDatabase({ url: postgres.url, poolSize: 10 });
    });
    afterAll(async () => {
      await database?.close();
      await postgres?.stop();
    });

    it('replicas of both owners migrating a database of before the grouping at once apply each migration once', async () => {
      await migrateAsBeforeTheGrouping(database.db);
      const results = await Promise.all([
        migrateToLatest(database.db, 'event-ingest'),
        migrateToLatest(database.db, 'event-ingest'),
        migrateToLatest(database.db, 'session'),
        migrateToLatest(database.db, 'session'),
      ]);
      expect(results.flat().sort()).toEqual([
        '2026-11-24T2330-rules-from-decisions',
        '2026-11-26T2100-event-sources',
        '2026-11-27T1600-session-access',
        '2026-11-27T1800-rule-keys',
      ]);
      await expect(awaitMigrated(database.db, 'event-ingest')).resolves.toBeUndefined();
    });

    it('with nothing to apply, a start takes no lock (safe through a transaction-mode pooler): it does not wait for one held elsewhere', async () => {
      for (const group of ['event-ingest', 'session', 'control'] as const) await migrateToLatest(database.db, group);
      // Another session holds the migrations' lock (here: for good, as one taken through a pooler
      // and released on another server connection would be).
      const holder = await openDatabase({ url: postgres.url, poolSize: 1 });
      try {
        await holder.db.connection().execute(async (connection) => {
          await sql`SELECT pg_advisory_lock(${0x5356_4d47})`.execute(connection);
          const started = Date.now();
          expect(await Promise.all([migrateToLatest(database.db, 'event-ingest'), migrateToLatest(database.db, 'control')])).toEqual([[], []]);
          expect(Date.now() - started).toBeLessThan(2_000);
          await sql`SELECT pg_advisory_unlock(${0x5356_4d47})`.execute(connection);
        });
      } finally {
        await holder.close();
      }
    });
  });
});

describe('migrations — a group renamed for its owner keeps its records', () => {
  it('control — a database migrated while the group was named "audit" starts under "control": applied migrations are not applied again, the rest are', async () => {
    const database = await openDatabase({});
    try {
      // As a build of before audit keys migrated the group then: its records in `svc_migrations_audit`.
      const {
        '2026-11-26T2200-audit-keys': keys,
        '2026-11-27T1700-approvals': approvals,
        '2026-11-27T1810-rule-revocations': revocations,
        ...before
      } = migrationGroups.control.migrations;
      expect(keys).toBeDefined();
      expect(approvals).toBeDefined();
      expect(revocations).toBeDefined();
      const migrator = new Migrator({
        db: database.db,
        provider: { getMigrations: () => Promise.resolve(before) },
        migrationTableName: 'svc_migrations_audit',
        migrationLockTableName: 'svc_migrations_audit_lock',
      });
      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      await sql`INSERT INTO webhooks (id, owner, url, kinds, format, scope, secret, created_at)
        VALUES ('wh_old', 'alice', 'https://hooks.example.com/x', '["worker.ended"]', 'standard', 'own', 'secret', now())`.execute(database.db);

      expect(await migrateToLatest(database.db, 'control')).toEqual([
        '2026-11-26T2200-audit-keys',
        '2026-11-27T1700-approvals',
        '2026-11-27T1810-rule-revocations',
      ]);
      expect(await migrateToLatest(database.db, 'control')).toEqual([]);
      await expect(awaitMigrated(database.db, 'control')).resolves.toBeUndefined();
      const { rows } = await sql<{ id: string }>`SELECT id FROM webhooks`.execute(database.db);
      expect(rows).toEqual([{ id: 'wh_old' }]);
      expect(await tableExists(database.db, 'svc_migrations_control')).toBe(false);
    } finally {
      await database.close();
    }
  });
});
