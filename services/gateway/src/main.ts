import { connectBus, natsCredentialsOf, serveHealthProbes } from '@svc/bus';
import { createGracefulShutdown, createLogger, readConfig } from '@svc/service-kit';
import { gatewaySettings, start } from './index.js';

const config = readConfig(gatewaySettings);
const logger = createLogger({ name: 'gateway', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

// The probes answer from the first moment: alive, and not ready until the gateway has started.
const probes = config.healthPort ? await serveHealthProbes({ port: config.healthPort }) : undefined;
if (probes) shutdown.add({ name: 'probes', close: () => probes.close() });

// NATS may come up after this process (or be restarting): wait for it, never exit.
const nc = await connectBus({ servers: config.natsUrl, name: `gateway-${config.instance}`, logger, credentials: natsCredentialsOf(config), connectTimeoutMs: Infinity });
probes?.watch(nc);
shutdown.add({ name: 'nats', close: () => nc.drain() });
const gateway = await start({ nc, logger, instance: config.instance, config });
shutdown.add({ name: 'gateway', close: () => gateway.stop() });
probes?.started();
