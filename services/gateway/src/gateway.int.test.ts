import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type ServiceHealth } from '@svc/protocol';
import { startBusFixture, type BusFixture } from '@svc/test-support';
import { start } from './index.js';

describe('gateway — start and stop', () => {
  let bus: BusFixture;
  beforeAll(async () => {
    bus = await startBusFixture();
  });
  afterAll(() => bus?.stop());

  it('answers health on the bus while running, and no longer after stop', async () => {
    const service = await start({ nc: bus.nc, logger: bus.logger, instance: 'gateway-0' });
    const health = await requestJson<ServiceHealth>(bus.nc, subjects.health('gateway'), {});
    expect(health).toMatchObject({ service: 'gateway', status: 'up', instance: 'gateway-0' });
    await service.stop();
    await expect(requestJson(bus.nc, subjects.health('gateway'), {})).rejects.toMatchObject({ code: 'unavailable' });
  });
});
