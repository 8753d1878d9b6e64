import { ensureStreams, isBusUnavailable, runService } from '@svc/bus';
import { integerSetting, retryWithBackoff } from '@svc/service-kit';
import { serviceStore, storeSettings } from '@svc/store';
import { start, tables } from './index.js';

await runService({
  service: 'event-ingest',
  settings: {
    ...storeSettings,
    replicaIndex: integerSetting('SVC_INGEST_REPLICA_INDEX', { default: 0, min: 0 }),
    replicaCount: integerSetting('SVC_INGEST_REPLICA_COUNT', { default: 1, min: 1 }),
  },
  store: serviceStore(tables),
  prepare: (nc, logger) => retryWithBackoff('creating the streams', () => ensureStreams(nc), { logger, retryable: isBusUnavailable }),
  start: ({ nc, db, logger, config }) =>
    start({ nc, db, logger, instance: config.instance, replicaIndex: config.replicaIndex, replicaCount: config.replicaCount }),
});
