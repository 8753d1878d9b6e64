import { parseGitCredentials } from '@svc/service-kit';
import type { SessionConfig } from '../config.js';
import { runSpawn } from './pipeline.js';
import { SANDBOX_TARGET } from './sandbox-layout.js';
import type { SpawnDeps, SpawnRequest } from './spawn-step.js';

/** How often a replica says a spawn it runs is still under way. */
const SPAWN_HEARTBEAT_MS = 5_000;
/** A spawn silent this long lost its replica (killed, or cut off from the store): it is failed. */
export const SPAWN_SILENT_MS = 20_000;

/** The spawn pipeline's settings, from the session service's. */
export function spawnSettingsOf(
  config: SessionConfig,
): Pick<SpawnDeps, 'sidecarBinaries' | 'controlPlaneUrl' | 'decisionWaitMs' | 'killGraceMs' | 'sandboxPath' | 'gitCredentials'> {
  return {
    sidecarBinaries: { [SANDBOX_TARGET]: config.sidecarBinary },
    controlPlaneUrl: config.sandboxControlPlaneUrl.replace(/\/+$/, ''),
    // A live sidecar polls at least every decision wait, well under the liveness deadline.
    decisionWaitMs: Math.min(25_000, Math.floor(config.sidecarLostAfterMs / 4)),
    killGraceMs: config.killGraceMs,
    sandboxPath: config.sandboxPath,
    gitCredentials: parseGitCredentials(config.gitCredentials),
  };
}

/**
 * The spawns this replica runs, in the background once the session is created. While this replica
 * spawns it, the session says so: if the replica dies, the watchdog of another (or of this one,
 * restarted) sees the spawn fall silent and fails it. `stop` ends every spawn at its next step and
 * waits for it to be undone.
 */
export function createSpawner(deps: SpawnDeps) {
  const spawning = new Set<Promise<void>>();
  const stopping = new AbortController();
  return {
    spawn(request: Omit<SpawnRequest, 'stopping'>): void {
      const spawn = runSpawn(deps, { ...request, stopping: stopping.signal });
      spawning.add(spawn);
      const heartbeat = setInterval(() => void deps.store.touchSpawn(request.sessionId).catch(() => {}), SPAWN_HEARTBEAT_MS);
      void spawn.finally(() => {
        clearInterval(heartbeat);
        spawning.delete(spawn);
      });
    },
    async stop(): Promise<void> {
      stopping.abort();
      await Promise.allSettled([...spawning]);
    },
  };
}

export type Spawner = ReturnType<typeof createSpawner>;
