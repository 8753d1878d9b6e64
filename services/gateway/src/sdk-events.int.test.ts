import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { EXAMPLE_EVENTS, subjects, type CreateWorkerResultType, type StoredEvent } from '@svc/protocol';
import { systemEvent, waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

describe('sdk-events — POST by the sidecar, GET by viewers, through the real event-ingest', () => {
  let gw: GatewayFixture;
  let worker: CreateWorkerResultType;
  let aliceToken: string;
  beforeAll(async () => {
    gw = await startGatewayFixture({}, [], { services: true });
    worker = await requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
    aliceToken = await gw.userToken('alice');
  });
  afterAll(() => gw?.stop());

  const post = (body: unknown, token = worker.token, workerId = worker.worker_id) =>
    gw.app.inject({ method: 'POST', url: `/v1/workers/${workerId}/sdk-events`, headers: { authorization: `Bearer ${token}` }, payload: body as object });
  const list = async (query = '', sub = 'alice') =>
    gw.app.inject({
      url: `/v1/workers/${worker.worker_id}/sdk-events${query}`,
      headers: { authorization: `Bearer ${sub === 'alice' ? aliceToken : await gw.userToken(sub)}` },
    });

  it('one event, then a batch of every type: 202 accepted, then listed in order with ids 1…n', async () => {
    const single = await post(systemEvent('first'));
    expect(single.statusCode).toBe(202);
    expect(single.json()).toEqual({ accepted: 1 });
    const batch = await post({ events: Object.values(EXAMPLE_EVENTS) });
    expect(batch.json()).toEqual({ accepted: 8 });
    const listed = await waitFor('9 events listed', async () => {
      const response = await list();
      return response.json().items.length === 9 ? (response.json() as { items: StoredEvent[]; total: number }) : undefined;
    });
    expect(listed.items.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9']);
    expect(listed.items.map((e) => e.uid)).toEqual(['first', ...Object.values(EXAMPLE_EVENTS).map((e) => e.uid)]);
  });

  it('after_id, limit and types page through the list; total counts the type filter', async () => {
    const page = (await list('?after_id=2&limit=3')).json();
    expect(page.items.map((e: StoredEvent) => e.id)).toEqual(['3', '4', '5']);
    expect(page.total).toBe(9);
    const tools = (await list('?types=tool_use,tool_result')).json();
    expect(tools.items.map((e: StoredEvent) => e.type)).toEqual(['tool_use', 'tool_result']);
    expect(tools.total).toBe(2);
  });

  it('before_id pages backwards: the limit events just before it, in id order; before_id=end is the newest page', async () => {
    const ids = (query: string) => list(query).then((response) => (response.json() as { items: StoredEvent[] }).items.map((e) => e.id));
    expect(await ids('?before_id=end&limit=3')).toEqual(['7', '8', '9']);
    expect(await ids('?before_id=7&limit=3')).toEqual(['4', '5', '6']);
    expect(await ids('?before_id=3&limit=3')).toEqual(['1', '2']);
    expect(await ids('?after_id=4&before_id=9&limit=2')).toEqual(['7', '8']);
    // The type filter holds backwards too (the two tool events, not the last two events).
    expect(await ids('?before_id=end&limit=2&types=tool_use,tool_result')).toEqual(await ids('?types=tool_use,tool_result'));
    expect((await list('?before_id=end&limit=1')).json().total).toBe(9);
  });

  it('re-posting the same uids stores nothing new', async () => {
    expect((await post({ events: [systemEvent('first'), EXAMPLE_EVENTS.assistant] })).statusCode).toBe(202);
    await post(systemEvent('marker'));
    await waitFor('the marker', async () => (await list()).json().total === 10);
    expect((await list('?after_id=9')).json().items.map((e: StoredEvent) => e.uid)).toEqual(['marker']);
  });

  it('an invalid event is refused whole, naming the event and field; nothing is stored', async () => {
    const response = await post({ events: [systemEvent('ok-but-refused'), { ...EXAMPLE_EVENTS.tool_use, data: { tool_use_id: 't' } }] });
    expect(response.statusCode).toBe(400);
    expect(response.json().code).toBe('invalid_request');
    expect(response.json().message).toContain('/body/events/1/data/name is required');
    expect((await post({ events: [] })).json().message).toMatch(/1 to 500 events/);
    expect((await post({ events: Array.from({ length: 501 }, (_, i) => systemEvent(`x${i}`)) })).statusCode).toBe(400);
    await post(systemEvent('after-refusal'));
    await waitFor('after-refusal', async () => (await list()).json().total === 11);
    expect((await list('?after_id=10')).json().items.map((e: StoredEvent) => e.uid)).toEqual(['after-refusal']);
  });

  it('another user sees 404 for this worker; bad query values name the field', async () => {
    const other = await list('', 'bob');
    expect(other.statusCode).toBe(404);
    expect(other.json().code).toBe('worker_not_found');
    const bad = await list('?after_id=-3&before_id=start&limit=5000&types=nope');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.map((d: { field: string }) => d.field)).toEqual(
      expect.arrayContaining(['/querystring/after_id', '/querystring/before_id', '/querystring/limit', '/querystring/types']),
    );
  });

  it('an ended worker is 409 worker_ended', async () => {
    const ended = await requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
    await requestJson(gw.bus.nc, subjects.rpc.setWorkerStatus, { worker_id: ended.worker_id, status: 'completed' });
    await waitFor('the gateway to see the end', async () => (await post(systemEvent('late'), ended.token, ended.worker_id)).statusCode === 409);
    expect((await post(systemEvent('late'), ended.token, ended.worker_id)).json().code).toBe('worker_ended');
  });
});
