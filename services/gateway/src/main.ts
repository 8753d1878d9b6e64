import { connectBus, natsCredentialsOf, serveHealthProbes } from '@svc/bus';
import { createGracefulShutdown, createLogger, readConfig } from '@svc/service-kit';
import { gatewaySettings, start } from './index.js';

const config = readConfig(gatewaySettings);
const logger = createLogger({ name: 'gateway', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

const nc = await connectBus({ servers: config.natsUrl, name: `gateway-${config.instance}`, logger, credentials: natsCredentialsOf(config) });
shutdown.add({ name: 'nats', close: () => nc.drain() });
const gateway = await start({ nc, logger, instance: config.instance, config });
shutdown.add({ name: 'gateway', close: () => gateway.stop() });
if (config.healthPort) {
  const probes = await serveHealthProbes({ nc, port: config.healthPort });
  shutdown.add({ name: 'probes', close: () => probes.close() });
}
