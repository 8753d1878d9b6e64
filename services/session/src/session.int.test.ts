import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type ServiceHealth } from '@svc/protocol';
import { startSessionFixture, type SessionFixture } from '../test/fixture.js';

describe('session — start and stop', () => {
  let fixture: SessionFixture;
  beforeAll(async () => {
    fixture = await startSessionFixture();
  });
  afterAll(() => fixture?.stop());

  it('answers health on the bus (with its store) while running, and no longer after stop', async () => {
    const health = await requestJson<ServiceHealth>(fixture.bus.nc, subjects.health('session'), {});
    expect(health).toMatchObject({ service: 'session', status: 'up', instance: 'session-0' });
    await fixture.service.stop();
    await expect(requestJson(fixture.bus.nc, subjects.health('session'), {})).rejects.toMatchObject({ code: 'unavailable' });
  });
});
