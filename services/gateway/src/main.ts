import { runService, streamsWhenDeclared } from '@svc/bus';
import { gatewaySettings, start } from './index.js';

await runService({
  service: 'gateway',
  settings: gatewaySettings,
  prepare: (nc, { logger }) => streamsWhenDeclared(nc, logger),
  start: ({ nc, logger, config }) => start({ nc, logger, instance: config.instance, config }),
});
