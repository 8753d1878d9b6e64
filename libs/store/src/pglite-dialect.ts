import type { PGlite } from '@electric-sql/pglite';
import { PostgresDialect, type PostgresPool, type PostgresPoolClient, type PostgresQueryResult } from 'kysely';

/**
 * A Kysely dialect over in-process PGlite. PGlite is one connection, so the "pool" hands it out
 * to one borrower at a time: a transaction owns it from BEGIN to COMMIT and nothing interleaves.
 * (The published kysely-pglite package pulls in a CLI and codegen; this is all we need.)
 */
export function createPGliteDialect(pglite: PGlite): PostgresDialect {
  let tail: Promise<void> = Promise.resolve();

  const pool: PostgresPool = {
    async connect() {
      let release!: () => void;
      const previous = tail;
      tail = new Promise<void>((resolve) => (release = resolve));
      await previous;
      let released = false;
      const client = {
        async query(sql: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<unknown>> {
          const result = await pglite.query(sql, [...parameters]);
          return {
            command: (result.command ?? 'SELECT') as PostgresQueryResult<unknown>['command'],
            rowCount: result.affectedRows ?? result.rows.length,
            rows: result.rows,
          };
        },
        release() {
          if (released) return;
          released = true;
          release();
        },
      };
      return client as unknown as PostgresPoolClient;
    },
    async end() {
      await tail;
      await pglite.close();
    },
  };
  return new PostgresDialect({ pool });
}
