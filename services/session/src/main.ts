import { runService, streamsWhenDeclared } from '@svc/bus';
import { serviceStore, storeSettings } from '@svc/store';
import { sessionSettings } from './config.js';
import { start, tables } from './index.js';

await runService({
  service: 'session',
  settings: { ...storeSettings, ...sessionSettings },
  store: serviceStore(tables),
  // Stopping sandboxes may take their kill grace: the deadline leaves room for it.
  shutdownTimeoutMs: (config) => config.killGraceMs + 10_000,
  prepare: (nc, { logger }) => streamsWhenDeclared(nc, logger),
  start: ({ nc, db, logger, config }) => start({ nc, db, logger, instance: config.instance, config }),
});
