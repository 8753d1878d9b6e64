import { ensureStreamsWhenReachable, runService, streamSettings } from '@svc/bus';
import { serviceStore, storeSettings } from '@svc/store';
import { controlSettings, start, tables } from './index.js';

await runService({
  service: 'control',
  settings: { ...storeSettings, ...streamSettings, ...controlSettings },
  store: serviceStore(tables),
  // Its webhook queue (SVC_WEBHOOKS) and the lifecycle stream it follows, whoever starts first.
  prepare: (nc, { logger, config }) => ensureStreamsWhenReachable(nc, logger, { replicas: config.jetstreamReplicas }),
  start: ({ nc, db, logger, config }) => start({ nc, db, logger, instance: config.instance, config }),
});
