import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type ServiceHealth } from '@svc/protocol';
import { openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, type BusFixture } from '@svc/test-support';
import { start } from './index.js';

describe('control — start and stop', () => {
  let bus: BusFixture;
  let database: StoreDatabase;
  beforeAll(async () => {
    bus = await startBusFixture();
    database = await openDatabase({});
  });
  afterAll(async () => {
    await database?.close();
    await bus?.stop();
  });

  it('answers health on the bus while running, and no longer after stop', async () => {
    const service = await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'control-0' });
    const health = await requestJson<ServiceHealth>(bus.nc, subjects.health('control'), {});
    expect(health).toMatchObject({ service: 'control', status: 'up', instance: 'control-0' });
    await service.stop();
    await expect(requestJson(bus.nc, subjects.health('control'), {})).rejects.toMatchObject({ code: 'unavailable' });
  });
});
