import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureStreams, requestJson } from '@svc/bus';
import { subjects, type ServiceHealth } from '@svc/protocol';
import { createEventStore, openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, startPostgres, type BusFixture, type PostgresProcess } from '@svc/test-support';
import { start } from './index.js';

describe('event-ingest — start and stop', () => {
  let bus: BusFixture;
  let postgres: PostgresProcess;
  let database: StoreDatabase;
  beforeAll(async () => {
    [bus, postgres] = await Promise.all([startBusFixture(), startPostgres()]);
    await ensureStreams(bus.nc);
    database = await openDatabase({ url: postgres.url });
  });
  afterAll(async () => {
    await database?.close();
    await Promise.all([bus?.stop(), postgres?.stop()]);
  });

  it('migrates the event tables at start and answers health', async () => {
    const service = await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'ingest-0', replicaIndex: 0, replicaCount: 2 });
    const [appended] = await createEventStore(database.db).append('wrk_1', [
      { type: 'system', uid: 'u1', ts: new Date().toISOString(), data: { level: 'info', message: 'hello' } },
    ]);
    expect(appended!.event.id).toBe('1');
    const health = await requestJson<ServiceHealth>(bus.nc, subjects.health('event-ingest'), {});
    expect(health).toMatchObject({ service: 'event-ingest', status: 'up', store: 'up' });
    await service.stop();
  });

  it('a second replica starting beside it migrates nothing and fails nothing', async () => {
    const replicas = await Promise.all(
      [0, 1].map((replicaIndex) =>
        start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: `ingest-${replicaIndex}`, replicaIndex, replicaCount: 2 }),
      ),
    );
    await Promise.all(replicas.map((r) => r.stop()));
  });

  it('an impossible replica index stops start-up', async () => {
    await expect(start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'x', replicaIndex: 2, replicaCount: 2 })).rejects.toThrow(
      /replica index must be in 0..1, got 2/,
    );
  });
});
