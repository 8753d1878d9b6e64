import { serveHealth, type NatsConnection } from '@svc/bus';
import type { Logger, RunningService } from '@svc/service-kit';
import { pingDatabase, type Database, type Kysely } from '@svc/store';

export interface ControlDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
}

/** Starts the control service. Decisions are not implemented yet (it says so); it answers health. */
export async function start(deps: ControlDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'control' });
  const health = serveHealth(deps.nc, 'control', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  log.warn('control: decisions and pending polls are not implemented yet; only health is served');
  return {
    async stop() {
      health.unsubscribe();
    },
  };
}
