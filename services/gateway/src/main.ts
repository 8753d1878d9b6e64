import { runServiceMain } from '@svc/bus';
import { createGracefulShutdown, createLogger, readConfig } from '@svc/service-kit';
import { gatewaySettings, start } from './index.js';

const config = readConfig(gatewaySettings);
const logger = createLogger({ name: 'gateway', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

await runServiceMain({ service: 'gateway', config, logger, shutdown, start: (nc) => start({ nc, logger, instance: config.instance, config }) });
