import { serveHealth, type NatsConnection } from '@svc/bus';
import type { Logger, RunningService } from '@svc/service-kit';

export interface GatewayDeps {
  nc: NatsConnection;
  logger: Logger;
  instance: string;
}

/**
 * Starts the gateway. So far it joins the bus and answers health; the HTTP and WebSocket
 * surface (middleware, auth, routes) is not implemented yet and says so at start.
 */
export async function start(deps: GatewayDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'gateway' });
  const health = serveHealth(deps.nc, 'gateway', { instance: deps.instance, logger: log });
  log.warn('gateway: the HTTP API is not implemented yet; only bus health is served');
  return {
    async stop() {
      health.unsubscribe();
    },
  };
}
