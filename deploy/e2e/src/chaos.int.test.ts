import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusResponseType } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { expectEverythingOnceInOrder, startLoad, unexpectedFailures, type Load } from './load.js';
import { startStack, type E2eStack } from './stack.js';

const OWNER = 'chaos-user';
/** Ten fake sidecars posting 1–10 events every 100 ms each (about 500 events/s), two viewers, two pollers. */
const LOAD = { sidecars: 10, viewers: 2, pollers: 2, intervalMs: 100 };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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

  beforeAll(async () => {
    stack = await startStack({ ingestReplicas: 2, durablePostgres: true, ingestProbes: true });
    userToken = await stack.userToken(OWNER);
  }, 120_000);
  afterAll(() => stack?.stop());

  const pids = () => stack.processes().map((p) => `${p.service}:${p.pid}`);
  const load = () => startLoad(stack, { owner: OWNER, userToken, ...LOAD });

  /** Every service still the process it was, all of them up again (GET /v1/status says ok). */
  async function expectHealthyAgain(before: string[]): Promise<void> {
    expect(pids()).toEqual(before);
    expect(stack.processes().every((p) => p.running()), stack.outputs()).toBe(true);
    await waitFor('GET /v1/status ok', async () => {
      const response = await fetch(`${stack.gatewayUrl}/v1/status`, { headers: { authorization: `Bearer ${userToken}` } });
      return response.status === 200 && ((await response.json()) as StatusResponseType).status === 'ok';
    }, 30_000, 100);
  }

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
    console.info(`chaos: ${scenario}: ${accepted} events accepted; ${answers.length} answers were not a success (${[...new Set(answers.map((a) => `${a.status} ${a.code ?? ''}`.trim()))].join(', ') || 'none'})`);
    await expectEverythingOnceInOrder(stack, running);
    expect(unexpectedFailures(running)).toEqual([]);
  }

  for (const downMs of [3_000, 30_000]) {
    it(`Postgres shut down (immediate) for ${downMs / 1000} s: storage resumes within 2 s of its return, no service restarts, nothing lost or doubled, clients see only 503s with Retry-After`, async () => {
      const before = pids();
      const running = await load();
      await sleep(2_000);
      await stack.postgres.suspend('immediate');
      const suspendedAt = Date.now();
      if (downMs >= 30_000) {
        await sleep(10_000);
        // An operator sees the outage: event-ingest is alive and not ready, saying why.
        for (const url of stack.ingestProbeUrls) {
          const response = await fetch(url);
          expect(response.status, url).toBe(503);
          expect(await response.json()).toMatchObject({ code: 'store_unavailable' });
        }
        // Reading stored events cannot work: 503 store_unavailable with Retry-After, not a 500.
        const read = await fetch(`${stack.gatewayUrl}/v1/workers/${running.sidecars[0]!.worker.worker_id}/sdk-events?after_id=0`, { headers: { authorization: `Bearer ${userToken}` } });
        expect(read.status).toBe(503);
        expect(read.headers.get('retry-after')).not.toBeNull();
        expect(await read.json()).toMatchObject({ code: 'store_unavailable' });
      }
      await sleep(downMs - (Date.now() - suspendedAt));
      await stack.postgres.resume();
      const resumedAt = Date.now();
      const resumedWithinMs = await storageResumesAfter(resumedAt);
      console.info(`chaos: Postgres down ${downMs} ms; storage resumed ${resumedWithinMs} ms after it accepted connections`);
      expect(resumedWithinMs).toBeLessThan(2_000);
      await sleep(2_000);
      await finish(running, `Postgres down ${downMs / 1000} s`);
      await expectHealthyAgain(before);
    }, downMs + 150_000);
  }

  it('nats-server killed (SIGKILL) and restarted on its store: POSTs meanwhile answered 503 within 1 s each, the first 202 within 1.5 s of the restart, nothing lost or doubled', async () => {
    const before = pids();
    const running = await load();
    await sleep(2_000);
    const killedAt = Date.now();
    await stack.nats.kill();
    await sleep(3_000);
    await stack.nats.restart();
    const restartedAt = Date.now();
    await sleep(3_000);
    const duringOutage = running.sidecars.flatMap((s) => s.failures).filter((f) => f.at >= killedAt && f.at < restartedAt);
    expect(duringOutage.length).toBeGreaterThan(0);
    expect(duringOutage.filter((f) => f.status !== 503 || f.tookMs >= 1_000)).toEqual([]);
    const firstAccepted = Math.min(...running.sidecars.flatMap((s) => s.acceptedAt.filter((t) => t >= restartedAt)));
    console.info(`chaos: nats-server down ${restartedAt - killedAt} ms; first 202 ${firstAccepted - restartedAt} ms after the restart; slowest 503 ${Math.max(...duringOutage.map((f) => f.tookMs))} ms`);
    expect(firstAccepted - restartedAt).toBeLessThanOrEqual(1_500);
    await finish(running, 'nats-server killed');
    await expectHealthyAgain(before);
  }, 180_000);

  it('the gateway killed (SIGKILL) and started again: sidecars and pollers retry, viewers reconnect after their last id, nothing lost or doubled', async () => {
    const running = await load();
    await sleep(2_000);
    const restart = await stack.stopGateway('kill');
    await sleep(1_000);
    await restart();
    await sleep(2_000);
    expect(running.sidecars.some((s) => s.failures.some((f) => f.status === 0))).toBe(true);
    expect(running.viewers.every((v) => v.reconnects > 0)).toBe(true);
    await finish(running, 'gateway killed');
  }, 180_000);

  for (const replica of [0, 1]) {
    it(`event-ingest replica ${replica} killed (SIGKILL) and started again: its partitions resume, nothing lost or doubled`, async () => {
      const running = await load();
      await sleep(2_000);
      await stack.ingest[replica]!.kill();
      await sleep(1_000);
      stack.ingest[replica] = stack.startIngestReplica(replica);
      await sleep(3_000);
      await finish(running, `event-ingest ${replica} killed`);
    }, 180_000);
  }
});
