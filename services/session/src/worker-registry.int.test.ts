import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWorkerToken } from '@svc/auth';
import { requestJson } from '@svc/bus';
import { kvBuckets, subjects, type CreateWorkerResultType, type WorkerRecord } from '@svc/protocol';
import type { BusFixture } from '@svc/test-support';
import { startSessionFixture, type SessionFixture } from '../test/fixture.js';

describe('session — the worker registry', () => {
  let fixture: SessionFixture;
  let bus: BusFixture;
  beforeAll(async () => {
    fixture = await startSessionFixture();
    bus = fixture.bus;
  });
  afterAll(() => fixture?.stop());

  it('creates a worker with a token whose hash (only) is published in the KV bucket', async () => {
    const created = await requestJson<CreateWorkerResultType>(bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
    expect(created.worker_id).toMatch(/^wrk_[A-Za-z0-9_-]+$/);
    const kv = await new Kvm(bus.nc).open(kvBuckets.workers);
    const record = (await kv.get(created.worker_id))!.json<WorkerRecord>();
    expect(record).toMatchObject({ worker_id: created.worker_id, owner: 'alice', status: 'pending' });
    expect(JSON.stringify(record)).not.toContain(created.token);
    expect(verifyWorkerToken(created.token, record.token_hash!)).toBe(true);
    const visible = await requestJson<Record<string, unknown>>(bus.nc, subjects.rpc.getWorker, { worker_id: created.worker_id });
    expect(visible).not.toHaveProperty('token_hash');
  });

  it('moves a worker through its statuses; an ended worker keeps its status', async () => {
    const { worker_id } = await requestJson<CreateWorkerResultType>(bus.nc, subjects.rpc.createWorker, { owner: 'alice', worker_id: 'wrk_lifecycle' });
    for (const status of ['provisioning', 'running', 'completed']) {
      expect(await requestJson(bus.nc, subjects.rpc.setWorkerStatus, { worker_id, status })).toMatchObject({ status });
    }
    await expect(requestJson(bus.nc, subjects.rpc.setWorkerStatus, { worker_id, status: 'running' })).rejects.toMatchObject({ code: 'worker_ended' });
  });

  it('refuses a duplicate id, an unknown worker and a malformed request, each with its code', async () => {
    await requestJson(bus.nc, subjects.rpc.createWorker, { owner: 'a', worker_id: 'wrk_twice' });
    await expect(requestJson(bus.nc, subjects.rpc.createWorker, { owner: 'a', worker_id: 'wrk_twice' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(requestJson(bus.nc, subjects.rpc.getWorker, { worker_id: 'wrk_nobody' })).rejects.toMatchObject({ code: 'worker_not_found' });
    await expect(requestJson(bus.nc, subjects.rpc.setWorkerStatus, { worker_id: 'wrk_twice', status: 'dancing' })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(requestJson(bus.nc, subjects.rpc.createWorker, { owner: 'a', worker_id: 'has.dots' })).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
