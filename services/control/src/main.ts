import { runService } from '@svc/bus';
import { openServiceStore, storeSettings } from '@svc/store';
import { start } from './index.js';

await runService({
  service: 'control',
  settings: storeSettings,
  store: openServiceStore,
  start: ({ nc, db, logger, config }) => start({ nc, db, logger, instance: config.instance }),
});
