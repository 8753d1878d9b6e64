import { requestJson, type NatsConnection } from '@svc/bus';
import { subjects, type PurgeEventsResultType } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { SessionStore } from './session-store.js';
import type { WorkerRegistry } from './worker-registry.js';

export interface RetentionOptions {
  nc: NatsConnection;
  store: SessionStore;
  /** Workers registered without a session: kept `defaultDays` after they ended. */
  workers: Pick<WorkerRegistry, 'endedWithoutSession' | 'markEventsPurged'>;
  logger: Logger;
  /** Days when a session's template does not say (`SVC_EVENT_RETENTION_DAYS`; 0: kept). */
  defaultDays: number;
  intervalMs: number;
  /** The clock (tests move it forward). */
  now?: () => number;
}

/** Sessions handled per round: a backlog (a first run on a large store) is worked off over rounds. */
const SESSIONS_PER_ROUND = 100;
const DAY_MS = 24 * 3600 * 1000;
/** A purge deletes in short batches with pauses (event-ingest): a large worker takes a while. */
const PURGE_TIMEOUT_MS = 10 * 60_000;

/**
 * Removes the events of sessions ended longer ago than their retention (docs/event-ingest.md
 * "Retention"), so the events table tracks the live work, not all history. Every replica may
 * run it: a purge is idempotent, and a session is marked only after event-ingest (the owner of
 * the events table) answered. A round that fails (NATS or the store away) is tried again at the
 * next one.
 */
export function startRetention(options: RetentionOptions): { sweep(): Promise<number>; stop(): void } {
  const log = options.logger.child({ component: 'retention' });
  const now = options.now ?? Date.now;
  let running: Promise<number> | undefined;

  /** Asks event-ingest, the owner of the events table, to remove a worker's events; resolves once they are gone. */
  async function purge(workerId: string): Promise<number> {
    const { deleted } = await requestJson<PurgeEventsResultType>(
      options.nc,
      subjects.rpc.purgeEvents,
      { worker_id: workerId },
      { timeoutMs: PURGE_TIMEOUT_MS },
    );
    return deleted;
  }

  async function round(): Promise<number> {
    let purged = 0;
    for (;;) {
      const at = new Date(now());
      const due = await options.store.pastRetention(at, options.defaultDays, SESSIONS_PER_ROUND);
      for (const session of due) {
        const deleted = await purge(session.worker_id);
        await options.store.markPurged(session.id, at);
        log.info({ session_id: session.id, worker_id: session.worker_id, deleted }, "an ended session's events removed: its retention is over");
        purged++;
      }
      if (due.length < SESSIONS_PER_ROUND) break;
    }
    // Workers without a session have no template: the default retention is theirs (0 keeps).
    if (options.defaultDays === 0) return purged;
    const at = new Date(now());
    for (const worker of await options.workers.endedWithoutSession(new Date(at.getTime() - options.defaultDays * DAY_MS))) {
      const deleted = await purge(worker.worker_id);
      await options.workers.markEventsPurged(worker.worker_id, at);
      log.info({ worker_id: worker.worker_id, deleted }, "an ended worker's events removed: its retention is over");
      purged++;
    }
    return purged;
  }

  /** One round at a time: a sweep asked for while one runs waits for that one. */
  const sweep = (): Promise<number> => {
    running ??= round().finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => {
    sweep().catch((err: unknown) => log.warn({ err }, 'retention round failed; trying again at the next'));
  }, options.intervalMs);
  timer.unref();
  return { sweep, stop: () => clearInterval(timer) };
}
