import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  partitionOfWorker,
  partitionsOfReplica,
  type CreateWorkerResultType,
  type ListResponseOf,
  type StatusResponseType,
  type StoredEvent,
} from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { standInAgent, startMockAnthropic } from '@svc/test-support/stand-ins';
import { failedAnswer, type FailedAnswer } from '../answers.js';
import { expectEverythingOnceInOrder, startLoad, unexpectedFailures, type Load } from '../load.js';
import { claudeAgent, CLAUDE_CODE_VERSIONS } from '@svc/test-support/real-agents';
import { controlClient, startSidecarWith } from '../sidecar-process.js';
import { decideEach } from '../deciders.js';
import { startStack, type E2eStack } from '../stack.js';
import { bashRequest, postAsWorker } from '../worker-events.js';

const OWNER = 'chaos-user';
/** Ten fake sidecars posting 1–10 events every 100 ms each (about 500 events/s), two viewers, two pollers. */
const LOAD = { sidecars: 10, viewers: 2, pollers: 2, intervalMs: 100 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** How long each fault lasts: the scenarios' own lengths, not waits for something to happen. */
const OUTAGE = {
  /** nats-server down (the status is checked halfway). */
  natsMs: 3_000,
  /** The gateway, an event-ingest replica, the control service or the partition owner down. */
  serviceMs: 1_000,
  /** How far into Postgres's 30 s outage the operator's view is checked. */
  longStoreCheckMs: 10_000,
  /** The gateway away from a running real Claude Code. */
  gatewayAwayMs: 60_000,
  /** The session service down during spawns. */
  sessionMs: 500,
  /** event-ingest kept waiting for Postgres before its return (it must not exit meanwhile). */
  ingestWaitsMs: 3_000,
};
/** The people's pauses between their polls and decisions (a client's pace). */
const DECIDER_PAUSE_MS = { afterFailure: 100, betweenRounds: 20 };

/**
 * One fault at a time on the deployed shape (every service its own process, real nats-server,
 * real Postgres with fsync and synchronous_commit on), under load: each scenario asserts that
 * every accepted event is stored exactly once and every reader has every one in order, that
 * clients saw only 503/504 `APIError`s with `Retry-After` (never a 500), that no service died
 * of it, and how fast svc recovered (docs/reliability.md records the figures).
 */
describe('chaos: one fault at a time under load', () => {
  let stack: E2eStack;
  let userToken: string;

  let dir: string;

  beforeAll(async () => {
    // A sidecar gone silent is noticed after 10 s (90 s in production), so a scenario can see it.
    stack = await startStack({ ingestReplicas: 2, durablePostgres: true, ingestProbes: true, sessionEnv: { SVC_SIDECAR_LOST_AFTER_MS: '10000' } });
    userToken = await stack.userToken(OWNER);
    // Not under /tmp: the real Claude Code keeps its HOME here.
    dir = await mkdtemp(path.join(homedir(), '.cache', 'svc-chaos-'));
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const pids = () => stack.processes().map((p) => `${p.service}:${p.pid}`);
  /** The load flows: every sidecar has had a few batches accepted (since `since`). */
  const loadFlowing = (running: Load, since = 0) =>
    waitFor('every sidecar posting', () => running.sidecars.every((s) => s.acceptedAt.filter((t) => t >= since).length >= 3), 30_000, 50);
  const load = () => startLoad(stack, { owner: OWNER, userToken, ...LOAD });

  /** Every service still the process it was, all of them up again (GET /v1/status says ok). */
  async function expectHealthyAgain(before: string[]): Promise<void> {
    expect(pids()).toEqual(before);
    expect(
      stack.processes().every((p) => p.running()),
      stack.outputs(),
    ).toBe(true);
    await waitFor(
      'GET /v1/status ok',
      async () => {
        const response = await fetch(`${stack.gatewayUrl}/v1/status`, { headers: { authorization: `Bearer ${userToken}` } });
        return response.status === 200 && ((await response.json()) as StatusResponseType).status === 'ok';
      },
      30_000,
      100,
    );
  }

  const status = async () =>
    (await (await fetch(`${stack.gatewayUrl}/v1/status`, { headers: { authorization: `Bearer ${userToken}` } })).json()) as StatusResponseType;

  /** The time until a new event is stored, counted from `since`: the store's row count grows. */
  async function storageResumesAfter(since: number): Promise<number> {
    const client = new pg.Client({ connectionString: stack.postgres.url });
    await client.connect();
    try {
      const count = async () => Number((await client.query<{ count: string }>('select count(*) from events')).rows[0]!.count);
      const first = await count();
      await waitFor('a new event stored', async () => (await count()) > first, 30_000, 20);
      return Date.now() - since;
    } finally {
      await client.end();
    }
  }

  async function finish(running: Load, scenario: string): Promise<void> {
    await running.stopPosting();
    const accepted = running.sidecars.reduce((sum, s) => sum + s.accepted.length, 0);
    const answers = [...running.sidecars.flatMap((s) => s.failures), ...running.pollers.flatMap((p) => p.failures)];
    console.info(
      `chaos: ${scenario}: ${accepted} events accepted; ${answers.length} answers were not a success (${[...new Set(answers.map((a) => `${a.status} ${a.code ?? ''}`.trim()))].join(', ') || 'none'})`,
    );
    await expectEverythingOnceInOrder(stack, running);
    expect(unexpectedFailures(running)).toEqual([]);
  }

  for (const downMs of [3_000, 30_000]) {
    it(
      `Postgres shut down (immediate) for ${downMs / 1000} s: storage resumes within 2 s of its return, no service restarts, nothing lost or doubled, clients see only 503s with Retry-After`,
      async () => {
        const before = pids();
        const running = await load();
        await loadFlowing(running);
        await stack.postgres.suspend('immediate');
        const suspendedAt = Date.now();
        if (downMs >= 30_000) {
          await sleep(OUTAGE.longStoreCheckMs);
          // An operator sees the outage: event-ingest is alive and not ready, saying why.
          for (const url of stack.ingestProbeUrls) {
            const response = await fetch(url);
            expect(response.status, url).toBe(503);
            expect(await response.json()).toMatchObject({ code: 'store_unavailable' });
          }
          // Reading stored events cannot work: 503 store_unavailable with Retry-After, not a 500.
          const read = await fetch(`${stack.gatewayUrl}/v1/workers/${running.sidecars[0]!.worker.worker_id}/sdk-events?after_id=0`, {
            headers: { authorization: `Bearer ${userToken}` },
          });
          expect(read.status).toBe(503);
          expect(read.headers.get('retry-after')).not.toBeNull();
          expect(await read.json()).toMatchObject({ code: 'store_unavailable' });
          expect(await status()).toMatchObject({ status: 'degraded', store: 'down', nats: 'up' });
        }
        await sleep(downMs - (Date.now() - suspendedAt));
        await stack.postgres.resume();
        const resumedAt = Date.now();
        const resumedWithinMs = await storageResumesAfter(resumedAt);
        console.info(`chaos: Postgres down ${downMs} ms; storage resumed ${resumedWithinMs} ms after it accepted connections`);
        expect(resumedWithinMs).toBeLessThan(2_000);
        await loadFlowing(running, resumedAt);
        await finish(running, `Postgres down ${downMs / 1000} s`);
        await expectHealthyAgain(before);
      },
      downMs + 150_000,
    );
  }

  it('nats-server killed (SIGKILL) and restarted on its store: POSTs meanwhile answered 503 within 1 s each, the first 202 within 1.5 s of the restart, nothing lost or doubled', async () => {
    const before = pids();
    const running = await load();
    await loadFlowing(running);
    const killedAt = Date.now();
    await stack.nats.kill();
    await sleep(OUTAGE.natsMs / 2);
    expect(await status()).toMatchObject({ status: 'degraded', nats: 'down' });
    await sleep(OUTAGE.natsMs / 2);
    await stack.nats.restart();
    const restartedAt = Date.now();
    await loadFlowing(running, restartedAt);
    const duringOutage = running.sidecars.flatMap((s) => s.failures).filter((f) => f.at >= killedAt && f.at < restartedAt);
    expect(duringOutage.length).toBeGreaterThan(0);
    expect(duringOutage.filter((f) => f.status !== 503 || f.tookMs >= 1_000)).toEqual([]);
    const firstAccepted = Math.min(...running.sidecars.flatMap((s) => s.acceptedAt.filter((t) => t >= restartedAt)));
    console.info(
      `chaos: nats-server down ${restartedAt - killedAt} ms; first 202 ${firstAccepted - restartedAt} ms after the restart; slowest 503 ${Math.max(...duringOutage.map((f) => f.tookMs))} ms`,
    );
    expect(firstAccepted - restartedAt).toBeLessThanOrEqual(1_500);
    await finish(running, 'nats-server killed');
    await expectHealthyAgain(before);
  }, 180_000);

  it('the gateway killed (SIGKILL) and started again: sidecars and pollers retry, viewers reconnect after their last id, nothing lost or doubled', async () => {
    const running = await load();
    await loadFlowing(running);
    const restart = await stack.stopGateway('kill');
    await sleep(OUTAGE.serviceMs);
    await restart();
    await loadFlowing(running, Date.now());
    await waitFor('every viewer back', () => running.viewers.every((v) => v.reconnects > 0));
    expect(running.sidecars.some((s) => s.failures.some((f) => f.status === 0))).toBe(true);
    expect(running.viewers.every((v) => v.reconnects > 0)).toBe(true);
    await finish(running, 'gateway killed');
  }, 180_000);

  it('the gateway killed while a person sends messages: every message answered 202 reaches the agent once, in order (a retry names it by its client id)', async () => {
    const MESSAGES = 30;
    const worker = await stack.createWorker(OWNER, { mode: 'conversation' });
    const sidecar = await startSidecarWith(dir, 'messages-under-kill', {
      adapter: 'generic',
      worker_id: worker.worker_id,
      control_plane_url: stack.gatewayUrl,
      auth_token: worker.token,
      conversation: true,
      agent: { command: 'sh', args: ['-c', 'while IFS= read -r line; do echo "got: $line"; done'] },
      decision_wait_ms: 2000,
    });
    const send = (n: number) =>
      fetch(`${stack.gatewayUrl}/v1/workers/${worker.worker_id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ text: `message ${n}`, client_message_id: `chaos-${n}` }),
        signal: AbortSignal.timeout(10_000),
      }).then(
        (response) => response.status,
        () => 0,
      );
    let restarted: Promise<void> | undefined;
    const failures: number[] = [];
    for (let n = 0; n < MESSAGES; n++) {
      // A third of the way in, the gateway dies for a while; the person's client asks again until it is back.
      if (n === MESSAGES / 3) {
        const restart = await stack.stopGateway('kill');
        restarted = sleep(OUTAGE.serviceMs).then(restart);
      }
      for (let status = await send(n); status !== 202; status = await send(n)) {
        failures.push(status);
        await sleep(DECIDER_PAUSE_MS.afterFailure);
      }
    }
    await restarted;
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.every((status) => status === 0 || status === 503 || status === 504)).toBe(true);
    const api = controlClient(stack.gatewayUrl, userToken);
    const echoed = async () =>
      (await api.events(worker.worker_id)).flatMap((e) =>
        e.type === 'system' && (e.data as { message: string }).message.startsWith('got: ') ? [(e.data as { message: string }).message] : [],
      );
    await waitFor('every message echoed by the agent', async () => (await echoed()).length >= MESSAGES, 60_000, 200);
    expect(await echoed()).toEqual(Array.from({ length: MESSAGES }, (_, n) => `got: message ${n}`));
    process.kill(sidecar.pid, 'SIGTERM');
    await sidecar.exited;
  }, 180_000);

  for (const replica of [0, 1]) {
    it(`event-ingest replica ${replica} killed (SIGKILL) and started again: its partitions resume, nothing lost or doubled`, async () => {
      const running = await load();
      await loadFlowing(running);
      await stack.ingest[replica]!.kill();
      await sleep(OUTAGE.serviceMs);
      stack.ingest[replica] = stack.startIngestReplica(replica);
      await loadFlowing(running, Date.now());
      await finish(running, `event-ingest ${replica} killed`);
    }, 180_000);
  }

  it('control killed (SIGKILL) while people decide for 10 agents, under load: every decision reaches its agent exactly once, each stored once', async () => {
    const ASKS = 20;
    const running = await load();
    const before = pids().filter((p) => !p.startsWith('control:'));
    const agents = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        const worker = await stack.createWorker(OWNER);
        const receipts = path.join(dir, `receipts-${i}`);
        const sidecar = await startSidecarWith(dir, `asker-${i}`, {
          adapter: 'claude-code',
          worker_id: worker.worker_id,
          control_plane_url: stack.gatewayUrl,
          auth_token: worker.token,
          agent: { command: standInAgent('ask-repeatedly'), prompt: 'go', env: { ASKS: String(ASKS), RECEIPTS: receipts } },
          decision_wait_ms: 2000,
        });
        return { worker, receipts, sidecar };
      }),
    );
    // People decide every open request as it comes; a request they cannot make now they make again.
    const failures: FailedAnswer[] = [];
    let deciding = true;
    const get = async (url: string) =>
      fetch(`${stack.gatewayUrl}${url}`, { headers: { authorization: `Bearer ${userToken}` }, signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
    const note = async (started: number, response: Response | undefined) => void failures.push(await failedAnswer(response, started));
    const deciders = agents.map(async ({ worker }) => {
      while (deciding) {
        const started = Date.now();
        const open = await get(`/v1/workers/${worker.worker_id}/control/requests?state=open`);
        if (open?.status !== 200) {
          await note(started, open);
          await sleep(DECIDER_PAUSE_MS.afterFailure);
          continue;
        }
        for (const request of ((await open.json()) as ListResponseOf<StoredEvent<'control_request'>>).items) {
          const decidedAt = Date.now();
          const answer = await controlClient(stack.gatewayUrl, userToken)
            .decide(worker.worker_id, { request_id: request.data.request_id, decision: 'allow' })
            .catch(() => undefined);
          if (answer?.status === 201 || answer?.status === 409) await answer.arrayBuffer();
          else await note(decidedAt, answer);
        }
        await sleep(DECIDER_PAUSE_MS.betweenRounds);
      }
    });
    await waitFor(
      'decisions under way',
      async () => (await controlClient(stack.gatewayUrl, userToken).events(agents[0]!.worker.worker_id)).some((e) => e.type === 'control_response'),
      30_000,
      50,
    );
    const restart = await stack.killService('control');
    await sleep(OUTAGE.serviceMs);
    restart();
    const codes = await Promise.all(agents.map((agent) => agent.sidecar.exited));
    deciding = false;
    await Promise.all(deciders);
    expect(codes, stack.outputs()).toEqual(agents.map(() => 0));
    for (const agent of agents) {
      const received = (await readFile(agent.receipts, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => line.split(' ')[0]);
      expect(received).toHaveLength(ASKS);
      expect(new Set(received).size).toBe(ASKS);
      const stored = await controlClient(stack.gatewayUrl, userToken).events(agent.worker.worker_id);
      expect(stored.filter((e) => e.type === 'control_response')).toHaveLength(ASKS);
    }
    console.info(
      `chaos: control killed: ${agents.length * ASKS} decisions delivered once each; ${failures.length} answers were not a success (${[...new Set(failures.map((f) => `${f.status} ${f.code ?? ''}`.trim()))].join(', ') || 'none'})`,
    );
    expect(failures.filter((a) => a.status !== 0 && !((a.status === 503 || a.status === 504) && a.code !== undefined && a.retryAfter))).toEqual([]);
    expect(pids().filter((p) => !p.startsWith('control:'))).toEqual(before);
    await finish(running, 'control killed (the event load)');
  }, 180_000);

  it('the partition owner (event-ingest) killed (SIGKILL) while 10 people decide the same requests: every decision stored once, every 201 and 409 truthful', async () => {
    const running = await load();
    const people = await Promise.all(Array.from({ length: 10 }, (_, i) => stack.userToken(`person-${i}`, { svc_admin: true })));
    // Workers whose partition replica 0 owns (of two), each with open requests.
    const owned = new Set(partitionsOfReplica(0, 2));
    const workers: CreateWorkerResultType[] = [];
    while (workers.length < 3) {
      const worker = await stack.createWorker(OWNER);
      if (owned.has(partitionOfWorker(worker.worker_id))) workers.push(worker);
    }
    const requests = workers.flatMap((worker) => Array.from({ length: 10 }, (_, i) => ({ worker, requestId: `contested-${i}` })));
    for (const worker of workers)
      expect(
        await postAsWorker(
          stack.gatewayUrl,
          worker,
          Array.from({ length: 10 }, (_, i) => bashRequest(`contested-${i}`)),
        ),
      ).toBe(202);
    await waitFor('the requests stored', async () => (await controlClient(stack.gatewayUrl, userToken).openRequests(workers.at(-1)!.worker_id)).length === 10);
    const outage = { killedAt: 0, restartedAt: 0 };
    const progress = { answers: 0 };
    const answered = () => progress.answers;
    const killing = (async () => {
      await waitFor('people deciding', () => answered() > 0, 30_000, 5);
      await stack.ingest[0]!.kill();
      outage.killedAt = Date.now();
      await sleep(OUTAGE.serviceMs);
      stack.ingest[0] = stack.startIngestReplica(0);
      outage.restartedAt = Date.now();
    })();
    // Every person decides every request, asking again after a 503/504 (or no answer) until it is a 201 or a 409.
    const verdicts = await Promise.all(people.map((token, person) => decideEach(stack.gatewayUrl, token, `person-${person}`, requests, progress)));
    await killing;
    for (const { worker, requestId } of requests) {
      const stored = (await controlClient(stack.gatewayUrl, userToken).events(worker.worker_id)).filter(
        (event) => event.type === 'control_response' && (event as StoredEvent<'control_response'>).data.request_id === requestId,
      ) as StoredEvent<'control_response'>[];
      expect(stored, `${worker.worker_id} ${requestId}`).toHaveLength(1);
      const decider = stored[0]!.data.decided_by;
      const answers = verdicts.flat().filter((verdict) => verdict.workerId === worker.worker_id && verdict.requestId === requestId);
      expect(answers).toHaveLength(people.length);
      // The one 201 went to the person stored as the decider; every 409 names that person.
      expect(answers.filter((answer) => answer.status === 201).map((answer) => answer.person)).toEqual([decider]);
      for (const answer of answers.filter((a) => a.status === 409)) expect(answer.decidedBy, answer.person).toBe(decider);
    }
    // Decisions were under way while the owner was away: they waited for its return.
    const spanning = verdicts.flat().filter((verdict) => verdict.askedAt < outage.killedAt + 500 && verdict.answeredAt > outage.restartedAt);
    expect(spanning.length).toBeGreaterThan(0);
    const retried = verdicts.flat().reduce((sum, verdict) => sum + verdict.retries.length, 0);
    console.info(
      `chaos: partition owner killed while 10 people decide ${requests.length} requests: ${spanning.length} waited for its return, ${retried} answers asked again (${[...new Set(verdicts.flat().flatMap((v) => v.retries))].join(', ') || 'none'})`,
    );
    await finish(running, 'partition owner killed while people decide');
  }, 180_000);

  it('the gateway unreachable for 60 s under a running real Claude Code, and under load: the agent is never blocked, everything it printed is stored once, in order, afterwards', async () => {
    const STEPS = 12;
    const running = await load();
    // Its model is reached directly; every step runs a shell command that takes a second.
    const turns = Array.from({ length: STEPS }, (_, n) => ({
      text: `Step ${n + 1}.`,
      tool: { name: 'Bash', input: { command: `sleep 1 && echo step ${n + 1}`, description: `Step ${n + 1}` } },
    }));
    const mock = await startMockAnthropic([...turns, { text: 'Done.' }]);
    try {
      const worker = await stack.createWorker(OWNER);
      const workspace = path.join(dir, 'claude-workspace');
      const home = path.join(dir, 'claude-home');
      await Promise.all([workspace, home].map((d) => mkdir(d, { recursive: true })));
      const sidecar = await startSidecarWith(dir, 'claude-through-outage', {
        adapter: 'claude-code',
        worker_id: worker.worker_id,
        control_plane_url: stack.gatewayUrl,
        auth_token: worker.token,
        autonomous: true,
        permissions: { auto_approve: ['Bash'], deny: [], ask: [] },
        agent: claudeAgent({ version: CLAUDE_CODE_VERSIONS.at(-1)!, cwd: workspace, home, baseUrl: mock.url, prompt: 'Run the steps.' }),
        decision_wait_ms: 2000,
      });
      const api = controlClient(stack.gatewayUrl, userToken);
      await waitFor('the agent under way', async () => (await api.events(worker.worker_id)).some((e) => e.type === 'assistant'), 60_000, 100);
      const restart = await stack.stopGateway('kill');
      const downAt = Date.now();
      // The agent goes on without the control plane: it finishes its steps while the gateway is away.
      await waitFor(
        'the agent done with its model',
        () => mock.requests().filter((body) => JSON.stringify(body).includes('Run the steps.')).length >= STEPS + 1,
        58_000,
        100,
      );
      const agentDoneAfterMs = Date.now() - downAt;
      await sleep(OUTAGE.gatewayAwayMs - (Date.now() - downAt));
      await restart();
      expect(await sidecar.exited, sidecar.stderr()).toBe(0);
      // Its 202s say JetStream has everything; the store catches up after the load's own backlog
      // of the outage, and the agent's exit is the last thing it sent.
      const stored = await waitFor(
        'everything the sidecar sent stored',
        async () => {
          const events = await api.events(worker.worker_id);
          return events.at(-1)?.type === 'system' && (events.at(-1)?.data as { subtype?: string }).subtype === 'agent_exit' ? events : undefined;
        },
        60_000,
        200,
      );
      // The sidecar numbers what it sends `<boot>:<n>`: every one stored once, in its order, ids 1, 2, 3…
      const uids = stored.map((e) => e.uid);
      const boot = uids[0]!.split(':')[0]!;
      expect(uids).toEqual(uids.map((_, n) => `${boot}:${n}`));
      expect(stored.map((e) => e.id)).toEqual(stored.map((_, n) => String(n + 1)));
      expect(stored.filter((e) => e.type === 'tool_result')).toHaveLength(STEPS);
      expect(stored.at(-1)).toMatchObject({ type: 'system', data: { subtype: 'agent_exit' } });
      console.info(
        `chaos: gateway away 60 s: the agent finished its ${STEPS} steps ${agentDoneAfterMs} ms into the outage; ${stored.length} events stored once, in order, afterwards`,
      );
      await finish(running, 'gateway away 60 s (the event load)');
    } finally {
      await mock.stop();
    }
  }, 240_000);

  it('session killed (SIGKILL) during spawns, under load: nothing hangs — every session ends failed, saying why, within 40 s of the restart, and new sessions spawn', async () => {
    const api = controlClient(stack.gatewayUrl, userToken);
    const running = await load();
    const created = await Promise.all(Array.from({ length: 4 }, () => api.createSession({ template: 'demo' })));
    const restart = await stack.killService('session');
    const killedAt = Date.now();
    await sleep(OUTAGE.sessionMs);
    restart();
    const statusOf = async (id: string) => {
      const response = await fetch(`${stack.gatewayUrl}/v1/sessions/${id}`, { headers: { authorization: `Bearer ${userToken}` } });
      return response.status === 200 ? ((await response.json()) as { status: string; failure?: { step: string; reason: string } }) : undefined;
    };
    const ended = await waitFor(
      'every session ended',
      async () => {
        const sessions = await Promise.all(created.map((session) => statusOf(session.id)));
        return sessions.every((session) => session && ['failed', 'completed', 'stopped'].includes(session.status)) ? sessions : undefined;
      },
      60_000,
      250,
    );
    console.info(
      `chaos: session killed during 4 spawns: all ended ${Date.now() - killedAt} ms later (${ended.map((s) => `${s!.status}: ${s!.failure?.reason.split(':')[0] ?? ''}`).join(', ')})`,
    );
    expect(Date.now() - killedAt).toBeLessThan(40_000 + 500);
    // The local sandboxes died with the session service; whatever had not finished spawning says so.
    for (const session of ended) expect(session!.failure?.reason ?? '').toMatch(/^(spawn_interrupted|sidecar_lost)/);
    const again = await api.createSession({ template: 'demo' });
    await api.oneOpenRequest(again.worker_id);
    await finish(running, 'session killed (the event load)');
  }, 120_000);

  it('event-ingest started while Postgres is away: it waits (alive, /readyz 503 saying so) instead of exiting, and is ready once Postgres is back', async () => {
    await stack.ingest[0]!.kill();
    await stack.postgres.suspend('immediate');
    stack.ingest[0] = stack.startIngestReplica(0);
    const probe = async () => {
      const response = await fetch(stack.ingestProbeUrls[0]!).catch(() => undefined);
      return response ? { status: response.status, body: (await response.json()) as { code?: string; message?: string } } : undefined;
    };
    const waiting = await waitFor(
      'the probe saying it waits for the store',
      async () => {
        const answer = await probe();
        return answer?.body.code === 'store_unavailable' ? answer : undefined;
      },
      30_000,
      100,
    );
    expect(waiting).toEqual({ status: 503, body: { code: 'store_unavailable', message: 'starting: waiting for the store' } });
    await sleep(OUTAGE.ingestWaitsMs);
    expect(stack.ingest[0]!.running(), stack.ingest[0]!.output()).toBe(true);
    expect((await probe())?.status).toBe(503);
    await stack.postgres.resume();
    const resumedAt = Date.now();
    await waitFor('ready', async () => (await probe())?.status === 200, 30_000, 50);
    console.info(`chaos: event-ingest started during a Postgres outage: ready ${Date.now() - resumedAt} ms after Postgres's return`);
    expect(stack.ingest[0]!.running()).toBe(true);
    const running = await load();
    await loadFlowing(running);
    await finish(running, 'after a start during an outage');
  }, 120_000);
});
