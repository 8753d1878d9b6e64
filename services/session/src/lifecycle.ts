import { subscribeStoredEvents, type NatsConnection } from '@svc/bus';
import { activityOf, CodedError, workerEndingExitCodeOf, type StoredEvent } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { SessionConfig } from './config.js';
import type { SandboxProvider } from './sandbox/provider.js';
import type { SessionStore } from './session-store.js';
import { endSession, failSession } from './session-status.js';
import { SPAWN_SILENT_MS } from './spawn/spawner.js';
import type { WorkerRegistry } from './worker-registry.js';

export interface LifecycleDeps {
  nc: NatsConnection;
  registry: WorkerRegistry;
  store: SessionStore;
  provider: SandboxProvider;
  logger: Logger;
  /** A running worker whose sidecar has not polled for this long is `failed` (`sidecar_lost`). */
  sidecarLostAfterMs: number;
  /** A spawn still unfinished after this long (its replica died) is `failed`. */
  spawnTimeoutMs: number;
  /** A spawn whose session has not been touched this long lost the replica running it. */
  spawnSilentMs: number;
  /** How often the watchdog looks. */
  watchdogIntervalMs: number;
  killGraceMs: number;
}

/** The lifecycle's deadlines, from the session service's settings. */
export function lifecycleTimingOf(
  config: Pick<SessionConfig, 'sidecarLostAfterMs' | 'killGraceMs'>,
): Pick<LifecycleDeps, 'sidecarLostAfterMs' | 'spawnTimeoutMs' | 'spawnSilentMs' | 'watchdogIntervalMs' | 'killGraceMs'> {
  return {
    sidecarLostAfterMs: config.sidecarLostAfterMs,
    spawnTimeoutMs: 10 * 60_000,
    spawnSilentMs: SPAWN_SILENT_MS,
    watchdogIntervalMs: Math.min(5000, Math.floor(config.sidecarLostAfterMs / 4)),
    killGraceMs: config.killGraceMs,
  };
}

/**
 * Ends workers the way their agents and sidecars say:
 * - the sidecar's `agent_exit` event, read durably from the lifecycle stream: exit code 0 →
 *   `completed`, anything else → `failed`, and the worker's token is revoked — unless a message
 *   resumes it (`lifeEvent`); its `activity` events go into its record;
 * - a suspended conversation past its `keep_sandbox_s` → `completed`, its sandbox destroyed;
 * - a watchdog (every replica; status changes are compare-and-set, so two replicas agree):
 *   a running worker's sidecar silent for `sidecarLostAfterMs` → `failed` (`sidecar_lost`), and
 *   its sandbox stopped; a spawn unfinished after `spawnTimeoutMs`, or silent for `spawnSilentMs`
 *   (the replica running it died: it touches the session every few seconds) → `failed`.
 */
export async function startLifecycle(deps: LifecycleDeps): Promise<{ stop(): Promise<void> }> {
  const log = deps.logger.child({ component: 'lifecycle' });

  const exits = await subscribeStoredEvents(deps.nc, {
    durableName: 'session-lifecycle',
    lifecycleOnly: true,
    from: 'new',
    logger: log,
    handler: (event) => lifeEvent(deps, log, event),
  });

  async function watch(): Promise<void> {
    const now = Date.now();
    for (const row of await deps.store.underWay()) {
      const { session } = row;
      const ids = { sessionId: session.id, workerId: session.worker_id };
      const logKeys = { session_id: session.id, worker_id: session.worker_id };
      if (session.status !== 'running') {
        if (now - Date.parse(session.created_at) > deps.spawnTimeoutMs) {
          log.warn(logKeys, 'the spawn did not finish in time');
          await failSession(deps, ids, { step: 'spawn', reason: `spawn_interrupted: not running after ${Math.round(deps.spawnTimeoutMs / 1000)} s` });
        } else if (now - Date.parse(session.updated_at) > deps.spawnSilentMs) {
          log.warn(logKeys, 'the spawn fell silent: the session service running it went away');
          await failSession(deps, ids, {
            step: 'spawn',
            reason: `spawn_interrupted: the session service spawning it stopped (no sign of it for ${Math.round(deps.spawnSilentMs / 1000)} s); create the session again`,
          });
          if (row.sandbox) await deps.provider.open(row.sandbox).stop(deps.killGraceMs);
        }
        continue;
      }
      if (!row.hasSidecar) continue;
      const worker = await deps.registry.get(session.worker_id).catch(() => undefined);
      if (!worker || worker.status !== 'running') continue;
      if (worker.activity === 'suspended' && worker.keep_sandbox_s !== undefined && now - Date.parse(worker.activity_at!) > worker.keep_sandbox_s * 1000) {
        log.info(logKeys, 'suspended past keep_sandbox_s: the session ends and its sandbox goes');
        await endSession(deps, ids, 'completed');
        if (row.sandbox) await deps.provider.open(row.sandbox).destroy(deps.killGraceMs);
        continue;
      }
      const lastSeen = Math.max(Date.parse(worker.last_seen_at ?? worker.updated_at), Date.parse(worker.updated_at));
      if (now - lastSeen <= deps.sidecarLostAfterMs) continue;
      log.warn({ ...logKeys, last_seen: new Date(lastSeen).toISOString() }, 'the sidecar went silent');
      await failSession(deps, ids, { step: 'liveness', reason: `sidecar_lost: no poll for ${Math.round((now - lastSeen) / 1000)} s` });
      if (row.sandbox) await deps.provider.open(row.sandbox).stop(deps.killGraceMs);
    }
  }

  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(watch).catch((err: unknown) => log.error({ err }, 'watchdog round failed'));
  }, deps.watchdogIntervalMs);

  return {
    async stop() {
      clearInterval(timer);
      await running;
      await exits.stop();
    },
  };
}

/**
 * One event of a worker's life: its activity goes into its record; an agent's exit ends it —
 * code 0 → `completed`, anything else → `failed` — unless the sidecar says a message resumes it
 * (`details.resumable`: a conversation's agent stopped when idle, or crashed).
 */
async function lifeEvent(deps: LifecycleDeps, log: Logger, event: StoredEvent): Promise<void> {
  const activity = activityOf(event);
  if (activity !== undefined) {
    await deps.registry.setActivity(event.worker_id, activity).catch((err: unknown) => {
      // Not a worker of ours (gone): nothing to do.
      if (!(err instanceof CodedError && err.code === 'worker_not_found')) throw err;
    });
    return;
  }
  const code = workerEndingExitCodeOf(event);
  if (code === undefined) return;
  const status = code === 0 ? 'completed' : 'failed';
  const session = await deps.store.byWorker(event.worker_id);
  // The session has ended: its token goes too (DESIGN.md). The exit is the sidecar's last
  // event, so everything it had to send is stored by now.
  try {
    const failure = code === 0 ? undefined : { step: 'agent', reason: `the agent exited with code ${code}` };
    // Already ended (stopped first): nothing to do.
    if (!(await endSession(deps, { workerId: event.worker_id, sessionId: session?.session.id }, status, failure))) return;
  } catch (err) {
    // Not a worker of ours (gone): nothing to do.
    if (err instanceof CodedError && err.code === 'worker_not_found') return;
    throw err;
  }
  log.info({ worker_id: event.worker_id, code, status }, 'the agent exited; its token is revoked');
}
