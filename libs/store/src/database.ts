import { PGlite } from '@electric-sql/pglite';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { migrationProvider } from './migrations/index.js';
import { createPGliteDialect } from './pglite-dialect.js';
import type { Database } from './schema.js';

const INT8_OID = 20;

export type StoreKind = 'postgres' | 'pglite';

/** An open database: the typed Kysely instance and how to close it. */
export interface StoreDatabase {
  db: Kysely<Database>;
  kind: StoreKind;
  close(): Promise<void>;
}

export type DatabaseLocation =
  /** A Postgres server, e.g. `postgres://svc@db:5432/svc`. */
  | { url: string; poolSize?: number; onConnectionError?: (err: Error) => void }
  /** Embedded PGlite: a data directory, or in memory when `dataDir` is omitted. */
  | { dataDir?: string }
  /** An embedded PGlite the caller opened (and may also query directly). */
  | { pglite: PGlite };

/** Opens Postgres (when given a URL) or embedded PGlite; bigints are read as decimal strings on both. */
export async function openDatabase(location: DatabaseLocation): Promise<StoreDatabase> {
  if ('url' in location) {
    const pool = new pg.Pool({ connectionString: location.url, max: location.poolSize ?? 10 });
    // pg already reads int8 as a string; say so explicitly, as PGlite is told the same.
    pool.on('connect', (client) => client.setTypeParser?.(INT8_OID, (value: string) => value));
    // An idle connection that the server drops must not crash the process; the pool replaces it.
    pool.on('error', (err) => location.onConnectionError?.(err));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  const pglite = 'pglite' in location ? location.pglite : createPGlite(location.dataDir);
  await pglite.waitReady;
  const db = new Kysely<Database>({ dialect: createPGliteDialect(pglite) });
  return { db, kind: 'pglite', close: () => db.destroy() };
}

/** A PGlite that reads bigints as decimal strings, like our pg pool. */
export function createPGlite(dataDir?: string): PGlite {
  return new PGlite({ ...(dataDir ? { dataDir } : {}), parsers: { [INT8_OID]: (value: string) => value } });
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/** Applies every pending migration (safe to run from several processes at once: Kysely takes a lock). */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Whether the database answers a trivial query within `timeoutMs`. */
export async function pingDatabase(db: Kysely<Database>, timeoutMs = 1000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
  try {
    return await Promise.race([sql`select 1`.execute(db).then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
