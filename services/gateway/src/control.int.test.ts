import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import {
  controlResponseUid,
  controlWithdrawnData,
  DEFAULT_DENY_MESSAGE,
  subjects,
  type IncomingEvent,
  type ListResponseOf,
  type PermissionRule,
  type StoredEvent,
  type StreamFrame,
  type WorkerRecord,
} from '@svc/protocol';
import { metricsRegistry } from '@svc/service-kit';
import { createEventStore } from '@svc/store';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

type Decision = StoredEvent<'control_response'>;

/** How long a long poll waits with no decision before one is made: it must not answer before there is one. */
const UNDECIDED_MS = 300;

describe('control channel — decisions, pending polls, deadlines, withdrawals (real NATS and Postgres, 2 control replicas)', () => {
  let gw: GatewayFixture;
  let alice: string;
  let workerToken: string;
  const workerId = 'wrk_control';
  let requests = 0;

  beforeAll(async () => {
    gw = await startGatewayFixture({}, [], { services: true, postgres: true, controlReplicas: 2 });
    alice = await gw.userToken('alice', { name: 'Alice Doe', email: 'alice@example.com' });
    workerToken = await gw.createWorker(workerId, 'alice');
  }, 60_000);
  afterAll(() => gw?.stop());

  const asUser = (token: string) => ({ authorization: `Bearer ${token}` });

  async function postEvents(id: string, token: string, events: IncomingEvent[]) {
    const response = await gw.app.inject({ method: 'POST', url: `/v1/workers/${id}/sdk-events`, headers: asUser(token), payload: { events } });
    expect(response.statusCode).toBe(202);
  }

  const openRequests = async (id = workerId, token = alice, state = 'open') =>
    (await gw.app.inject({ url: `/v1/workers/${id}/control/requests?state=${state}`, headers: asUser(token) })).json() as ListResponseOf<
      StoredEvent<'control_request'>
    >;

  /** The sidecar reports a tool request; resolves once the control plane lists it as open. */
  async function askPermission(id = workerId, token = workerToken, tool = 'Bash'): Promise<string> {
    const requestId = `req-${++requests}`;
    await postEvents(id, token, [
      {
        type: 'control_request',
        uid: `cr-${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, tool_name: tool, input: { command: 'npm test' } },
      },
    ]);
    await waitFor(`${requestId} open`, async () => (await openRequests(id)).items.some((r) => r.data.request_id === requestId));
    return requestId;
  }

  const decide = (body: Record<string, unknown>, token = alice, id = workerId) =>
    gw.app.inject({ method: 'POST', url: `/v1/workers/${id}/control`, headers: asUser(token), payload: body });

  const pending = (afterId: string, waitMs = 0, id = workerId, token = workerToken) =>
    gw.app.inject({ url: `/v1/workers/${id}/control/pending?after_id=${afterId}&wait_ms=${waitMs}`, headers: asUser(token) });
  const longPollsHeld = async () => (await metricsRegistry.getSingleMetric('svc_long_polls_in_flight')!.get()).values[0]?.value ?? 0;
  /** Starts a long poll; resolves once the gateway holds it (its answer is `held.answer`). */
  async function heldPoll(afterId: string, waitMs: number): Promise<{ answer: ReturnType<typeof pending> }> {
    const before = await longPollsHeld();
    const answer = pending(afterId, waitMs);
    await waitFor('the long poll held', async () => (await longPollsHeld()) > before);
    return { answer };
  }

  it('10 concurrent decisions on one request across 2 control replicas: exactly one 201, nine 409 already_decided naming who and when', async () => {
    const requestId = await askPermission();
    const deciders = await Promise.all(Array.from({ length: 10 }, (_, i) => gw.userToken(`admin-${i}`, { svc_admin: true, name: `Admin ${i}` })));
    const answers = await Promise.all(
      deciders.map((token, i) => decide({ request_id: requestId, decision: i % 2 === 0 ? 'allow' : 'deny', message: `from ${i}` }, token)),
    );
    const created = answers.filter((a) => a.statusCode === 201);
    const refused = answers.filter((a) => a.statusCode === 409);
    expect(created).toHaveLength(1);
    expect(refused).toHaveLength(9);
    const winner = created[0]!.json() as Decision;
    for (const answer of refused) {
      const body = answer.json();
      expect(body.code).toBe('already_decided');
      expect(body.message).toContain(winner.data.decided_by);
      expect(body.message).toContain(winner.ts);
      expect(body.details).toMatchObject({ decided_by: winner.data.decided_by, decided_at: winner.ts, decision: winner.data.decision });
    }
    const stored = (await pending('0')).json() as ListResponseOf<Decision>;
    expect(stored.items.filter((d) => d.data.request_id === requestId)).toHaveLength(1);
  });

  it('a decision records who decided from the JWT (sub, name, email); a deny without a message gets a default one', async () => {
    const requestId = await askPermission();
    const answer = await decide({ request_id: requestId, decision: 'deny' });
    expect(answer.statusCode).toBe(201);
    expect((answer.json() as Decision).data).toEqual({
      request_id: requestId,
      decision: 'deny',
      message: DEFAULT_DENY_MESSAGE,
      decided_by: 'alice',
      decided_by_name: 'Alice Doe',
      decided_by_email: 'alice@example.com',
    });
    const blank = await askPermission();
    expect(((await decide({ request_id: blank, decision: 'deny', message: '  ' })).json() as Decision).data.message).toBe(DEFAULT_DENY_MESSAGE);
  });

  it('the pending poll returns each decision exactly once across successive after_id cursors', async () => {
    const first = (await pending('0')).json() as ListResponseOf<Decision>;
    const cursor = first.items.at(-1)!.id;
    expect((await pending(cursor)).json()).toMatchObject({ items: [] });
    const requestId = await askPermission();
    await decide({ request_id: requestId, decision: 'allow', updated_input: { command: 'npm test -- --run' } });
    const next = (await pending(cursor)).json() as ListResponseOf<Decision>;
    expect(next.items.map((d) => d.data.request_id)).toEqual([requestId]);
    expect(next.items[0]!.data.updated_input).toEqual({ command: 'npm test -- --run' });
    expect((await pending(next.items[0]!.id)).json()).toMatchObject({ items: [] });
    const ids = [...first.items, ...next.items].map((d) => Number(d.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('a long poll answers as soon as the decision is stored, and empty at its deadline when none comes', async () => {
    const cursor = ((await pending('0')).json() as ListResponseOf<Decision>).items.at(-1)!.id;
    const requestId = await askPermission();
    const started = Date.now();
    const poll = pending(cursor, 20_000);
    await new Promise((resolve) => setTimeout(resolve, UNDECIDED_MS));
    const decidedAt = Date.now();
    expect((await decide({ request_id: requestId, decision: 'allow' })).statusCode).toBe(201);
    const answer = await poll;
    const answeredAfterDecision = Date.now() - decidedAt;
    expect(answer.statusCode).toBe(200);
    expect((answer.json() as ListResponseOf<Decision>).items.map((d) => d.data.request_id)).toEqual([requestId]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(UNDECIDED_MS);
    expect(answeredAfterDecision).toBeLessThan(2_000);

    const last = (answer.json() as ListResponseOf<Decision>).items[0]!.id;
    const quietStart = Date.now();
    const quiet = await pending(last, 400);
    expect(quiet.json()).toMatchObject({ items: [] });
    expect(Date.now() - quietStart).toBeGreaterThanOrEqual(390);
  });

  it('long polls after a store read are answered from the announcements: no further read of the store, the total counted on', async () => {
    // A plain poll reads the store; this gateway keeps the worker's decisions from then on.
    const before = (await pending('0')).json() as ListResponseOf<Decision>;
    const requestId = await askPermission();
    // Event queries the gateway sends from here on (a plain subscriber sees every request).
    const reads: unknown[] = [];
    const spy = gw.bus.nc.subscribe(subjects.rpc.listEvents, { callback: (_err, msg) => void reads.push(msg.json()) });
    const poll = await heldPoll(before.items.at(-1)!.id, 20_000);
    expect((await decide({ request_id: requestId, decision: 'allow' })).statusCode).toBe(201);
    const answer = (await poll.answer).json() as ListResponseOf<Decision>;
    // The sidecar's next long poll starts from memory too, and a quiet one ends at its deadline.
    const quiet = (await pending(answer.items.at(-1)!.id, 300)).json() as ListResponseOf<Decision>;
    spy.unsubscribe();
    expect(answer.items.map((d) => d.data.request_id)).toEqual([requestId]);
    expect(answer.total).toBe(before.total + 1);
    expect(quiet).toEqual({ items: [], total: before.total + 1 });
    // Only the quiet poll's deadline reads the store (an announcement may have been lost).
    expect(reads).toHaveLength(1);
  });

  it('a long poll that missed an announcement reads the store again and answers every decision after its cursor, in order', async () => {
    const cursor = ((await pending('0')).json() as ListResponseOf<Decision>).items.at(-1)!.id;
    const [unannounced, announced] = [await askPermission(), await askPermission()];
    const poll = await heldPoll(cursor, 20_000);
    // Stored without an announcement (as if the announcement were lost on the way)…
    const data = { request_id: unannounced, decision: 'allow' as const, decided_by: 'alice' };
    await createEventStore(gw.database!.db).appendMany([
      { workerId, events: [{ type: 'control_response', uid: controlResponseUid(unannounced), ts: new Date().toISOString(), data }] },
    ]);
    // …then one announced as usual: its id does not follow the poll's head, so the store is read.
    expect((await decide({ request_id: announced, decision: 'deny' })).statusCode).toBe(201);
    const answer = (await poll.answer).json() as ListResponseOf<Decision>;
    expect(answer.items.map((d) => d.data.request_id)).toEqual([unannounced, announced]);
  });

  it('a deadline fires: the policy stores a deny with a reason as "policy:timeout", and a later decision is refused as closed', async () => {
    const id = 'wrk_deadline';
    const token = await gw.createWorker(id, 'alice', 'running', { decision_policy: { decision_timeout_s: 1, on_timeout: 'deny' } });
    const requestId = await askPermission(id, token);
    const decision = await waitFor(
      'the timeout decision',
      async () => ((await pending('0', 0, id, token)).json() as ListResponseOf<Decision>).items.find((d) => d.data.request_id === requestId),
      10_000,
      100,
    );
    expect(decision.data).toMatchObject({ decision: 'deny', decided_by: 'policy:timeout' });
    expect(decision.data.message).toMatch(/Bash.*1 s/);
    const late = await decide({ request_id: requestId, decision: 'allow' }, alice, id);
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ code: 'request_closed', details: { reason: 'expired' } });
    expect((await openRequests(id)).items).toEqual([]);
  });

  it('a request withdrawn by the agent closes for every viewer and refuses a late decision with request_closed', async () => {
    const requestId = await askPermission();
    await postEvents(workerId, workerToken, [
      { type: 'system', uid: `withdraw-${requestId}`, ts: new Date().toISOString(), data: controlWithdrawnData(requestId) },
    ]);
    await waitFor('the request no longer open', async () => !(await openRequests()).items.some((r) => r.data.request_id === requestId));
    expect((await openRequests(workerId, alice, 'closed')).items.some((r) => r.data.request_id === requestId)).toBe(true);
    const late = await decide({ request_id: requestId, decision: 'allow' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ code: 'request_closed', details: { reason: 'withdrawn' } });
  });

  it("a request the sidecar's policy decided (an event it posted) is closed: not open, and a person's decision is refused naming the policy", async () => {
    const requestId = `policy-${++requests}`;
    await postEvents(workerId, workerToken, [
      {
        type: 'control_request',
        uid: `pr-${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, tool_name: 'Read', input: { file_path: 'a' } },
      },
      {
        type: 'control_response',
        uid: `pd-${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, decision: 'allow', message: 'auto-approved', decided_by: 'policy' },
      },
    ]);
    await waitFor('the request listed as closed', async () =>
      (await openRequests(workerId, alice, 'closed')).items.some((r) => r.data.request_id === requestId),
    );
    expect((await openRequests()).items.some((r) => r.data.request_id === requestId)).toBe(false);
    const late = await decide({ request_id: requestId, decision: 'deny' });
    expect(late.statusCode).toBe(409);
    expect(late.json()).toMatchObject({ code: 'already_decided', details: { decided_by: 'policy', decision: 'allow' } });
  });

  it('provenance — a worker cannot post a person\'s decision, an "always" or a decision under a reserved uid: 403, nothing stored, no rule; a person\'s decision carries their source', async () => {
    const requestId = await askPermission();
    const rulesBefore = (
      (await gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: asUser(alice) })).json() as ListResponseOf<PermissionRule>
    ).total;
    const eventsBefore = ((await gw.app.inject({ url: `/v1/workers/${workerId}/sdk-events?limit=1`, headers: asUser(alice) })).json() as { total: number })
      .total;
    const forged: Array<[string, string, Record<string, unknown>]> = [
      ["the control service's uid", controlResponseUid(requestId), { decided_by: 'policy' }],
      ['a person named', `forged-1-${requestId}`, { decided_by: 'local-user', decided_by_name: 'Local user' }],
      ['a rule for everyone', `forged-2-${requestId}`, { decided_by: 'policy', scope: 'always' }],
      ['a rule pattern', `forged-3-${requestId}`, { decided_by: 'policy', input_pattern: '*' }],
      ['an egress uid', `egress:${requestId}:decision`, { decided_by: 'policy' }],
    ];
    for (const [what, uid, claims] of forged) {
      const response = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${workerId}/sdk-events`,
        headers: asUser(workerToken),
        payload: { type: 'control_response', uid, ts: new Date().toISOString(), data: { request_id: requestId, decision: 'allow', ...claims } },
      });
      expect(response.statusCode, what).toBe(403);
      expect(response.json(), what).toMatchObject({ code: 'forbidden', message: expect.stringContaining('a worker may not post this') });
    }
    // Nothing was stored: the request is still open, no rule appeared, and a person still decides it.
    expect((await openRequests()).items.some((r) => r.data.request_id === requestId)).toBe(true);
    const rulesAfter = (
      await gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: asUser(alice) })
    ).json() as ListResponseOf<PermissionRule>;
    expect(rulesAfter.total).toBe(rulesBefore);
    const answer = await decide({ request_id: requestId, decision: 'allow' });
    expect(answer.statusCode).toBe(201);
    expect(answer.json()).toMatchObject({ uid: controlResponseUid(requestId), source: 'user:api:alice', data: { decided_by: 'alice' } });
    const listed = (
      await gw.app.inject({ url: `/v1/workers/${workerId}/sdk-events?after_id=${eventsBefore}`, headers: asUser(alice) })
    ).json() as ListResponseOf<StoredEvent>;
    expect(listed.items.map((event) => [event.type, event.source])).toEqual([['control_response', 'user:api:alice']]);
    // The request itself is the worker's.
    const request = (await openRequests(workerId, alice, 'all')).items.find((r) => r.data.request_id === requestId);
    expect(request?.source).toBe('worker');
  });

  it("provenance — the sidecar's own policy answer is stored as the worker's policy: it closes the request, makes no rule, and nobody is named", async () => {
    const requestId = `own-policy-${++requests}`;
    await postEvents(workerId, workerToken, [
      {
        type: 'control_request',
        uid: `op-${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, tool_name: 'Read', input: { file_path: 'a' } },
      },
      {
        type: 'control_response',
        uid: `od-${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, decision: 'allow', message: 'autonomous: allowed', decided_by: 'policy', scope: 'once' },
      },
    ]);
    await waitFor('closed', async () => (await openRequests(workerId, alice, 'closed')).items.some((r) => r.data.request_id === requestId));
    const events = (
      await gw.app.inject({ url: `/v1/workers/${workerId}/sdk-events?types=control_response&limit=1000`, headers: asUser(alice) })
    ).json() as ListResponseOf<Decision>;
    expect(events.items.find((event) => event.data.request_id === requestId)?.source).toBe('worker:policy');
  });

  it('late joiners: the open requests are listed until decided, then listed as closed', async () => {
    const requestId = await askPermission(workerId, workerToken, 'Write');
    const open = await openRequests();
    expect(open.items.find((r) => r.data.request_id === requestId)?.data).toMatchObject({ tool_name: 'Write', input: { command: 'npm test' } });
    await decide({ request_id: requestId, decision: 'allow' });
    expect((await openRequests()).items.some((r) => r.data.request_id === requestId)).toBe(false);
    expect((await openRequests(workerId, alice, 'all')).items.some((r) => r.data.request_id === requestId)).toBe(true);
  });

  it("every viewer's stream carries the request and then the decision, so the prompt closes everywhere", async () => {
    const url = (await gw.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
    const frames: StreamFrame[] = [];
    const after = ((await gw.app.inject({ url: `/v1/workers/${workerId}/sdk-events?after_id=0&limit=1`, headers: asUser(alice) })).json() as { total: number })
      .total;
    const socket = new WebSocket(`${url}/v1/workers/${workerId}/sdk-events/stream?after_id=${after}`, { headers: asUser(alice) });
    socket.on('message', (data) => frames.push(JSON.parse(String(data)) as StreamFrame));
    await waitFor('live', () => frames.some((f) => f.kind === 'live'));
    const requestId = await askPermission();
    await decide({ request_id: requestId, decision: 'allow' });
    const events = () => frames.flatMap((f) => (f.kind === 'event' ? [f.event] : []));
    await waitFor('request and decision on the stream', () => events().some((e) => e.type === 'control_response' && e.data.request_id === requestId));
    expect(events().map((e) => e.type)).toEqual(['control_request', 'control_response']);
    socket.close();
  });

  it('"always" adds a rule for the tool (and input pattern) that the sidecar reads, and the decision shows who added it', async () => {
    const requestId = await askPermission(workerId, workerToken, 'Bash');
    const answer = await decide({ request_id: requestId, decision: 'allow', scope: 'always', input_pattern: 'npm test*' });
    expect((answer.json() as Decision).data).toMatchObject({ scope: 'always', input_pattern: 'npm test*', decided_by: 'alice' });
    const rules = (
      await gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: asUser(workerToken) })
    ).json() as ListResponseOf<PermissionRule>;
    expect(rules.items).toEqual([
      expect.objectContaining({ tool_name: 'Bash', input_pattern: 'npm test*', decision: 'allow', added_by: 'alice', request_id: requestId }),
    ]);
    // The worker's owner lists them too; someone who may not see the worker is told it does not exist.
    const asOwner = (await gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: asUser(alice) })).json() as ListResponseOf<PermissionRule>;
    expect(asOwner.items).toEqual(rules.items);
    const stranger = await gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: asUser(await gw.userToken('mallory')) });
    expect(stranger.statusCode).toBe(404);
    expect(stranger.json()).toMatchObject({ code: 'worker_not_found' });
  });

  it('a control_request repeated under the same id is no request of its own: the first is listed and decided, its tool makes the rule', async () => {
    const requestId = `repeated-${++requests}`;
    const ask = (uid: string, tool: string, input: Record<string, unknown>): IncomingEvent => ({
      type: 'control_request',
      uid,
      ts: new Date().toISOString(),
      data: { request_id: requestId, tool_name: tool, input },
    });
    await postEvents(workerId, workerToken, [
      ask(`${requestId}-a`, 'WebFetch', { url: 'https://example.com' }),
      ask(`${requestId}-b`, 'Read', { file_path: 'README.md' }),
    ]);
    await waitFor('listed', async () => (await openRequests()).items.some((r) => r.data.request_id === requestId));
    const listed = (await openRequests()).items.filter((r) => r.data.request_id === requestId);
    expect(listed.map((r) => r.data.tool_name)).toEqual(['WebFetch']);
    expect((await decide({ request_id: requestId, decision: 'allow', scope: 'always' })).statusCode).toBe(201);
    const rules = (await gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: asUser(alice) })).json() as ListResponseOf<PermissionRule>;
    expect(rules.items.find((rule) => rule.request_id === requestId)?.tool_name).toBe('WebFetch');
  });

  it('a person\'s "always" on a network request must name host:port: a pattern without a port is 400, and nothing is decided', async () => {
    const requestId = await askPermission(workerId, workerToken, 'network');
    const refused = await decide({ request_id: requestId, decision: 'deny', scope: 'always', input_pattern: 'example.com' });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('/body/input_pattern') });
    expect((await openRequests()).items.some((r) => r.data.request_id === requestId)).toBe(true);
    expect((await decide({ request_id: requestId, decision: 'deny', scope: 'always', input_pattern: '*:22' })).statusCode).toBe(201);
  });

  it("a deny may end the agent's turn (interrupt: true), kept in the decision; interrupt with allow is 400 and decides nothing", async () => {
    const requestId = await askPermission(workerId, workerToken, 'Bash');
    const refused = await decide({ request_id: requestId, decision: 'allow', interrupt: true });
    expect(refused.statusCode).toBe(400);
    expect(refused.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('interrupt') });
    const answer = await decide({ request_id: requestId, decision: 'deny', message: 'stop here', interrupt: true });
    expect(answer.statusCode).toBe(201);
    expect((answer.json() as Decision).data).toMatchObject({ decision: 'deny', message: 'stop here', interrupt: true });
  });

  it('every poll records the sidecar as alive', async () => {
    const id = 'wrk_alive';
    const token = await gw.createWorker(id, 'alice');
    await pending('0', 0, id, token);
    const record = await waitFor('last_seen_at', async () => {
      const worker = await requestJson<Omit<WorkerRecord, 'token_hash'>>(gw.bus.nc, subjects.rpc.getWorker, { worker_id: id });
      return worker.last_seen_at;
    });
    expect(Date.now() - Date.parse(record)).toBeLessThan(10_000);
  });

  describe('each refusal has its own APIError', () => {
    it('unknown worker: 404 worker_not_found', async () => {
      const answer = await decide({ request_id: 'x', decision: 'allow' }, alice, 'wrk_nobody');
      expect(answer.statusCode).toBe(404);
      expect(answer.json()).toMatchObject({ code: 'worker_not_found' });
    });

    it('a worker the caller may not steer: the same 404 worker_not_found', async () => {
      const requestId = await askPermission();
      const answer = await decide({ request_id: requestId, decision: 'allow' }, await gw.userToken('mallory'));
      expect(answer.statusCode).toBe(404);
      expect(answer.json()).toMatchObject({ code: 'worker_not_found' });
    });

    it('an ended worker: 409 worker_ended', async () => {
      await gw.createWorker('wrk_ended', 'alice', 'completed');
      const answer = await decide({ request_id: 'x', decision: 'allow' }, alice, 'wrk_ended');
      expect(answer.statusCode).toBe(409);
      expect(answer.json()).toMatchObject({ code: 'worker_ended' });
    });

    it('no such request: 404 request_not_found', async () => {
      const answer = await decide({ request_id: 'never-asked', decision: 'allow' });
      expect(answer.statusCode).toBe(404);
      expect(answer.json()).toMatchObject({ code: 'request_not_found' });
    });

    it('a bad body: 400 invalid_request naming the field', async () => {
      const answer = await decide({ request_id: 'x', decision: 'maybe' });
      expect(answer.statusCode).toBe(400);
      expect(answer.json().code).toBe('invalid_request');
      expect(answer.json().message).toContain('decision');
    });

    it('a worker token cannot decide (403), and a user token cannot poll for decisions (403)', async () => {
      expect((await decide({ request_id: 'x', decision: 'allow' }, workerToken)).statusCode).toBe(403);
      expect((await pending('0', 0, workerId, alice)).statusCode).toBe(403);
    });

    it('a long poll longer than 30 s is refused: 400 naming wait_ms', async () => {
      const answer = await pending('0', 30_001);
      expect(answer.statusCode).toBe(400);
      expect(answer.json().message).toContain('wait_ms');
    });
  });
});
