import { ensureStreamsWhenReachable, runService, streamSettings } from '@svc/bus';
import { integerSetting } from '@svc/service-kit';
import { serviceStore, storeSettings } from '@svc/store';
import { start, tables } from './index.js';

await runService({
  service: 'event-ingest',
  settings: {
    ...storeSettings,
    ...streamSettings,
    replicaIndex: integerSetting('SVC_INGEST_REPLICA_INDEX', { default: 0, min: 0 }),
    replicaCount: integerSetting('SVC_INGEST_REPLICA_COUNT', { default: 1, min: 1 }),
  },
  store: serviceStore(tables),
  prepare: (nc, { logger, config }) => ensureStreamsWhenReachable(nc, logger, { replicas: config.jetstreamReplicas }),
  start: ({ nc, db, logger, config }) =>
    start({ nc, db, logger, instance: config.instance, replicaIndex: config.replicaIndex, replicaCount: config.replicaCount }),
});
