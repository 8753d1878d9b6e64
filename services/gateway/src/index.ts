import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalIssuer, createOidcVerifier, createWorkerDirectory, type LocalIssuer } from '@svc/auth';
import { serveHealth, type NatsConnection } from '@svc/bus';
import { ConfigError, type Logger, type RunningService } from '@svc/service-kit';
import type { FastifyPluginAsync } from 'fastify';
import { buildGatewayApp } from './app.js';
import type { GatewayConfig } from './config.js';

export { buildGatewayApp } from './app.js';
export { gatewaySettings, type GatewayConfig } from './config.js';
export { LOCAL_USER } from './routes/local-issuer.js';

export interface GatewayDeps {
  nc: NatsConnection;
  logger: Logger;
  instance: string;
  config: GatewayConfig;
  /** Domain routes (added by later issues and tests). */
  routes?: FastifyPluginAsync[];
}

export interface RunningGateway extends RunningService {
  /** Where it listens, e.g. http://127.0.0.1:8080. */
  url: string;
  /** Where the worker port listens (the sandboxes' channel leads there), e.g. http://127.0.0.1:8082. */
  workerUrl: string;
  localIssuer?: LocalIssuer | undefined;
}

/** Starts the gateway: the HTTP surface on `config.host:config.port`, and its bus health. */
export async function start(deps: GatewayDeps): Promise<RunningGateway> {
  const { config } = deps;
  const log = deps.logger.child({ service: 'gateway' });
  if (!config.oidcIssuer && !config.localIssuer) {
    throw new ConfigError(['SVC_OIDC_ISSUER is required (the OIDC issuer URL), unless SVC_LOCAL_ISSUER=true serves the built-in one']);
  }
  const publicUrl = (config.publicUrl ?? `http://${config.host}:${config.port}`).replace(/\/+$/, '');
  const localIssuer = config.localIssuer
    ? await createLocalIssuer({ stateDir: config.stateDir, issuer: publicUrl, adminClaim: config.adminClaim, groupsClaim: config.groupsClaim })
    : undefined;
  const users = createOidcVerifier({
    issuer: localIssuer?.issuer ?? config.oidcIssuer!,
    audience: config.oidcAudience,
    adminClaim: config.adminClaim,
    groupsClaim: config.groupsClaim,
    // The built-in issuer's tokens are signed on this clock: no skew to allow for, so one expires when it says.
    ...(localIssuer ? { keys: localIssuer.jwks(), clockToleranceSeconds: 0 } : {}),
  });
  const workers = await createWorkerDirectory(deps.nc, log);
  const app = await buildGatewayApp({
    nc: deps.nc,
    logger: deps.logger,
    instance: deps.instance,
    settings: config,
    users,
    workers,
    localIssuer,
    routes: deps.routes ?? [],
  });
  const url = await app.listen({ host: config.host, port: config.port });
  const workerUrl = await listenOn(app.workerListener, config.workerHost ?? config.host, config.workerPort);
  const health = serveHealth(deps.nc, 'gateway', { instance: deps.instance, logger: log });
  log.info({ url, workerUrl, localIssuer: Boolean(localIssuer) }, 'gateway listening');
  return {
    url,
    workerUrl,
    localIssuer,
    async stop() {
      health.unsubscribe();
      await app.close();
      await workers.stop();
    },
  };
}

/** Listens and says where, as `http://host:port`. */
async function listenOn(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shown}:${address.port}`;
}
