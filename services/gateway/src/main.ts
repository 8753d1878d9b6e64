import { runService } from '@svc/bus';
import { gatewaySettings, start } from './index.js';

await runService({
  service: 'gateway',
  settings: gatewaySettings,
  start: ({ nc, logger, config }) => start({ nc, logger, instance: config.instance, config }),
});
