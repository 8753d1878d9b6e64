import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { CodedError } from '@svc/protocol';

/** Node's socket errors that mean the database cannot be reached (as opposed to a bad query). */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * Postgres's SQLSTATEs of a server going away or not taking connections: class 08 (connection
 * exception), 57P01–57P03 (admin or crash shutdown, cannot connect now), 53300 (too many
 * connections).
 */
function isUnavailableState(code: string): boolean {
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/** pg's own messages for a connection that died or could not be made. */
const CONNECTION_LOST = /Connection terminated|not queryable|timeout exceeded when trying to connect|connection error|Client was closed/i;

/** Whether `err` says the database is gone rather than that the query was wrong. */
export function isConnectionLoss(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (SOCKET_ERRORS.has(code) || (/^[0-9A-Z]{5}$/.test(code) && isUnavailableState(code)))) return true;
  if (CONNECTION_LOST.test(err.message)) return true;
  // AggregateError (a host with several addresses) and wrapped errors.
  if (err instanceof AggregateError && err.errors.some(isConnectionLoss)) return true;
  return err.cause !== undefined && err.cause !== err && isConnectionLoss(err.cause);
}

/** Whether `err`, or what caused it, is the store being unavailable (the typed error or the raw one). */
export function isStoreUnavailable(err: unknown): boolean {
  for (let cause: unknown = err, depth = 0; cause instanceof Error && depth < 10; cause = cause.cause, depth++) {
    if (cause instanceof CodedError && cause.code === 'store_unavailable') return true;
  }
  return isConnectionLoss(err);
}

function storeUnavailable(err: unknown): CodedError {
  return new CodedError('store_unavailable', 'the database is unavailable; retry shortly', undefined, { cause: err });
}

/**
 * The pg pool as Kysely's dialect sees it, with every connection failure — connecting, or a
 * query on a connection that died — thrown as `store_unavailable`, whatever the caller: the
 * gateway answers it with 503 and `Retry-After`, a retrying loop knows to wait. A client in use
 * when its server goes away also emits `'error'`; it gets a listener, or the process would die of
 * it (the pool only listens to idle clients). pg-pool drops a broken client on release.
 */
export function unavailableAsTypedError(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (err) {
        throw isConnectionLoss(err) ? storeUnavailable(err) : err;
      }
      return {
        async query(...args: Parameters<PostgresPoolClient['query']>) {
          try {
            return await (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
          } catch (err) {
            throw isConnectionLoss(err) ? storeUnavailable(err) : err;
          }
        },
        release: () => client.release(),
      } as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}
