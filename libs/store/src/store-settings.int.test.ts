import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, createLogger } from '@svc/service-kit';
import { startPostgres, type PostgresProcess } from '@svc/test-support';
import { openDatabase } from './database.js';
import { serviceStore } from './store-settings.js';

const logger = createLogger({ name: 'store-settings-test', level: 'silent' });

/**
 * `SVC_DATABASE_MIGRATION_URL`: the migrations run on their own connection. Shown here with the
 * case a pooler shares: the services' role may read and write the tables but not change the
 * schema (PostgreSQL 15 gives no one but the owner CREATE on `public`), and a second role does
 * the migrations.
 */
describe('a service store with its migrations on another connection (SVC_DATABASE_MIGRATION_URL)', () => {
  let postgres: PostgresProcess;
  let serviceUrl: string;

  beforeAll(async () => {
    postgres = await startPostgres();
    const admin = await openDatabase({ url: postgres.url });
    try {
      await sql`CREATE ROLE svc_service LOGIN`.execute(admin.db);
      await sql`ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO svc_service`.execute(admin.db);
      await sql`ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO svc_service`.execute(admin.db);
    } finally {
      await admin.close();
    }
    serviceUrl = postgres.url.replace('postgres://postgres@', 'postgres://svc_service@');
  }, 60_000);
  afterAll(async () => {
    await postgres?.stop();
  });

  it('without it, a role that may not change the schema cannot start the service: the store says why', async () => {
    const store = await serviceStore({ owns: 'session' })({ databaseUrl: serviceUrl, stateDir: '.' }, logger);
    try {
      await expect(store.ready()).rejects.toThrow(/permission denied for schema public/);
    } finally {
      await store.close();
    }
  });

  it('with it, the migrations run there and the service works on its own connection', async () => {
    const store = await serviceStore({ owns: 'session' })({ databaseUrl: serviceUrl, databaseMigrationUrl: postgres.url, stateDir: '.' }, logger);
    try {
      expect(await store.ready()).toEqual(['2026-11-22T1200-sessions', '2026-11-25T1100-event-retention', '2026-11-27T1600-session-access']);
      const { rows } = await sql<{ who: string; sessions: string }>`SELECT current_user AS who, (SELECT count(*) FROM sessions)::text AS sessions`.execute(
        store.db,
      );
      expect(rows).toEqual([{ who: 'svc_service', sessions: '0' }]);
    } finally {
      await store.close();
    }
  });

  it('a migration URL without a database URL (the embedded store) is a configuration error', async () => {
    await expect(
      serviceStore({ owns: 'session' })({ databaseUrl: undefined, databaseMigrationUrl: postgres.url, stateDir: '.' }, logger),
    ).rejects.toBeInstanceOf(ConfigError);
  });
});
