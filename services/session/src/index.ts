import { serveHealth, type NatsConnection } from '@svc/bus';
import { serveWorkerRegistry } from './worker-registry.js';
import type { Logger, RunningService } from '@svc/service-kit';

export interface SessionDeps {
  nc: NatsConnection;
  logger: Logger;
  instance: string;
}

/**
 * Starts the session service: the worker registry (create a worker with its token, get it,
 * set its status) and health. Sessions, templates and spawning are not implemented yet; it says so.
 */
export async function start(deps: SessionDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'session' });
  const registry = await serveWorkerRegistry(deps.nc, log);
  const health = serveHealth(deps.nc, 'session', { instance: deps.instance, logger: log });
  log.warn('session: sessions, templates and the spawn pipeline are not implemented yet; the worker registry and health are served');
  return {
    async stop() {
      health.unsubscribe();
      registry.stop();
    },
  };
}
