import { connectBus } from '@svc/bus';
import { commonSettings, createGracefulShutdown, createLogger, readConfig } from '@svc/service-kit';
import { start } from './index.js';

const config = readConfig(commonSettings);
const logger = createLogger({ name: 'session', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

const nc = await connectBus({ servers: config.natsUrl, name: `session-${config.instance}`, logger });
shutdown.add({ name: 'nats', close: () => nc.drain() });
const service = await start({ nc, logger, instance: config.instance });
shutdown.add({ name: 'session', close: () => service.stop() });
