import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { createPGliteDialect } from './pglite-dialect.js';
import { unavailableAsTypedError } from './store-errors.js';
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
    // A connection attempt that hangs (a black-holed host) fails after 5 s instead of forever.
    const pool = new pg.Pool({ connectionString: location.url, max: location.poolSize ?? 10, connectionTimeoutMillis: 5000 });
    pool.on('connect', (client) => {
      // pg already reads int8 as a string; say so explicitly, as PGlite is told the same.
      client.setTypeParser?.(INT8_OID, (value: string) => value);
      // A connection the server drops while it is in use emits 'error' on its client, where the
      // pool does not listen: unheard, it would end the process. The query fails on its own.
      client.on('error', (err) => location.onConnectionError?.(err));
    });
    // An idle connection that the server drops must not crash the process; the pool replaces it.
    pool.on('error', (err) => location.onConnectionError?.(err));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: unavailableAsTypedError(pool) }) });
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
