import { CodedError, isEndedStatus, WORKER_STATUSES, type CallerType } from '@svc/protocol';
import { sql, type Database, type Kysely } from '@svc/store';
import { endSession, type SessionIds } from './session-status.js';
import { createSessionStore } from './session-store.js';
import type { WorkerRegistry } from './worker-registry.js';

/** The first key of the advisory lock that takes one person's new sessions one at a time (the second is their `sub`'s hash). */
const ADMISSION_LOCK = 0x5e55_10c4;

/** pending, provisioning, running: what a sandbox exists (or is being made) for. */
const UNENDED = WORKER_STATUSES.filter((status) => !isEndedStatus(status));

/** How many of `owner`'s sessions have not ended (the partial index on unended sessions finds them). */
export async function countUnendedSessions(db: Kysely<Database>, owner: string): Promise<number> {
  const row = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('status', 'in', UNENDED)
    .where('owner', '=', owner)
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

function tooManySessions(unended: number, max: number): CodedError {
  return new CodedError(
    'too_many_sessions',
    `you have ${unended} sessions that have not ended, and one person may have ${max}: stop one (DELETE /v1/sessions/{id}) or wait for one to end, then try again`,
    { unended, max },
  );
}

/**
 * Before anything is made for a new session: refuses (429 `too_many_sessions`) a person who
 * already has `max` sessions not ended. Admins are counted like anyone (by their own `sub`).
 */
export async function checkSessionCap(db: Kysely<Database>, caller: CallerType, max: number): Promise<void> {
  const unended = await countUnendedSessions(db, caller.sub);
  if (unended >= max) throw tooManySessions(unended, max);
}

/**
 * Once the new session's row is stored: concurrent creates of one person (on any replica) can all
 * pass `checkSessionCap`, so each counts again with its own row in place, one at a time for that
 * person (a transaction-scoped advisory lock: safe behind a transaction-mode pooler). A count over
 * `max` ends this session as `failed` (step `admission`, before anything was spawned) and refuses
 * it, so the next count sees one fewer: of a burst, exactly as many stay as there was room for.
 */
export async function confirmSessionCap(
  deps: { db: Kysely<Database>; registry: WorkerRegistry },
  caller: CallerType,
  ids: SessionIds,
  max: number,
): Promise<void> {
  const refusedAt = await deps.db.transaction().execute(async (trx) => {
    await sql`SELECT pg_advisory_xact_lock(${ADMISSION_LOCK}::int, hashtext(${caller.sub}))`.execute(trx);
    const unended = await countUnendedSessions(trx, caller.sub);
    if (unended <= max) return undefined;
    // The session's row is changed in this transaction, so the next count (waiting on the lock) sees it ended.
    await endSession({ registry: deps.registry, store: createSessionStore(trx) }, ids, 'failed', {
      step: 'admission',
      reason: `refused: ${caller.sub} had ${max} sessions that had not ended`,
    });
    return unended - 1;
  });
  if (refusedAt !== undefined) throw tooManySessions(refusedAt, max);
}
