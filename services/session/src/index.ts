import { serveHealth, type NatsConnection } from '@svc/bus';
import type { Logger, RunningService } from '@svc/service-kit';

export interface SessionDeps {
  nc: NatsConnection;
  logger: Logger;
  instance: string;
}

/** Starts the session service. Sessions, workers and spawning are not implemented yet (it says so); it answers health. */
export async function start(deps: SessionDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'session' });
  const health = serveHealth(deps.nc, 'session', { instance: deps.instance, logger: log });
  log.warn('session: sessions, workers and the spawn pipeline are not implemented yet; only health is served');
  return {
    async stop() {
      health.unsubscribe();
    },
  };
}
