import { ensureStreamsWhenReachable, runService } from '@svc/bus';
import { serviceStore, storeSettings } from '@svc/store';
import { controlSettings, start, tables } from './index.js';

await runService({
  service: 'control',
  settings: { ...storeSettings, ...controlSettings },
  store: serviceStore(tables),
  // Its webhook queue (SVC_WEBHOOKS) and the lifecycle stream it follows, whoever starts first.
  prepare: ensureStreamsWhenReachable,
  start: ({ nc, db, logger, config }) => start({ nc, db, logger, instance: config.instance, config }),
});
