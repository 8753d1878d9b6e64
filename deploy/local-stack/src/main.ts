import { NatsServerNotFoundError } from '@svc/bus';
import { ConfigError, createGracefulShutdown, createLogger, optionalStringSetting, readConfig, stringSetting, choiceSetting, redactUrl } from '@svc/service-kit';
import { startLocalStack } from './index.js';

let config;
try {
  config = readConfig({
    stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
    databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
    natsUrl: optionalStringSetting('SVC_NATS_URL'),
    logLevel: choiceSetting('SVC_LOG_LEVEL', ['trace', 'debug', 'info', 'warn', 'error', 'silent'], { default: 'warn' }),
  });
} catch (err) {
  process.stderr.write(`${err instanceof ConfigError ? err.message : String(err)}\n`);
  process.exit(1);
}

const logger = createLogger({ name: 'svc-local', level: config.logLevel });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

try {
  const stack = await startLocalStack({ ...config, logger });
  shutdown.add({ name: 'local stack', close: () => stack.stop() });
  process.stdout.write(
    [
      'svc local stack is up.',
      `  NATS:     ${stack.natsUrl}${config.natsUrl ? '' : ' (started here)'}`,
      `  store:    ${stack.store === 'pglite' ? `embedded PGlite in ${config.stateDir}/pglite` : redactUrl(config.databaseUrl ?? '')}`,
      '  services: event-ingest, control, session, gateway (answering health on svc.health.*)',
      '  Not implemented yet: the gateway HTTP API, the demo worker and `svc login` arrive with the next issues.',
      'Press Ctrl+C to stop.',
      '',
    ].join('\n'),
  );
} catch (err) {
  if (err instanceof NatsServerNotFoundError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  throw err;
}
