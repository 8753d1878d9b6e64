import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureStreams } from '@svc/bus';
import { EXAMPLE_EVENTS, kvBuckets, streams, type CreateWorkerResultType, type IncomingEvent } from '@svc/protocol';
import { startNatsCluster, waitFor, type NatsCluster } from '@svc/test-support';
import { expectEverythingOnceInOrder, startLoad, unexpectedFailures } from '../load.js';
import { startStack, type E2eStack } from '../stack.js';

const OWNER = 'cluster-user';
const INGEST_REPLICAS = 2;
/** Each phase of the leader's loss under load: posting before the kill, with the leader down, after its restart. */
const LOAD_PHASE_MS = 2_000;
/** How soon what left the incoming queue is in the store (stored, then acknowledged: a moment apart). */
const STORED_AFTER_QUEUE_MS = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Every stream svc declares, the KV buckets' among them. */
const STREAMS = [...Object.values(streams).map((stream) => stream.name), ...[kvBuckets.workers, kvBuckets.modelUsage].map((bucket) => `KV_${bucket}`)];

/**
 * svc on a three-server JetStream cluster (three local nats-servers with routes, JetStream on
 * each), as on Kubernetes with the official NATS chart: the streams' replicas come from
 * `SVC_JETSTREAM_REPLICAS`, and a server's loss loses nothing with 3 — while with 1 the same
 * check finds the events the lost server alone held missing (so it would catch a loss).
 */
describe('a three-server NATS cluster: SVC_JETSTREAM_REPLICAS', () => {
  let stack: E2eStack<NatsCluster>;
  let jsm: JetStreamManager;
  let database: pg.Client;

  beforeAll(async () => {
    const nats = await startNatsCluster({ size: 3 });
    stack = await startStack({ nats, ingestReplicas: INGEST_REPLICAS, durablePostgres: true, env: { SVC_JETSTREAM_REPLICAS: '3' } });
    jsm = await jetstreamManager(stack.nc);
    database = new pg.Client({ connectionString: stack.postgres.url });
    await database.connect();
  }, 120_000);
  afterAll(async () => {
    await database?.end();
    await stack?.stop();
  });

  const replicasOf = async (name: string) => (await jsm.streams.info(name)).config.num_replicas;
  /** The member that leads a stream: with one replica, the one server that holds it. */
  async function leaderOf(name: string): Promise<string> {
    return waitFor(`a leader of ${name}`, async () => (await jsm.streams.info(name).catch(() => undefined))?.cluster?.leader, 30_000, 100);
  }

  /** Posts `batches` batches of 10 events for a worker; each must be accepted (202: durable in JetStream). */
  async function post(worker: CreateWorkerResultType, batches: number): Promise<string[]> {
    const accepted: string[] = [];
    const examples = Object.values(EXAMPLE_EVENTS);
    for (let batch = 0; batch < batches; batch++) {
      const events = Array.from(
        { length: 10 },
        (_, i) => ({ ...examples[i % examples.length]!, uid: `${worker.worker_id}:${batch * 10 + i}` }) as IncomingEvent,
      );
      const response = await fetch(`${stack.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      expect(response.status, await response.text()).toBe(202);
      accepted.push(...events.map((event) => event.uid));
    }
    return accepted;
  }

  const storedUids = async (workerId: string) =>
    (await database.query<{ uid: string }>('select uid from events where worker_id = $1 order by id', [workerId])).rows.map((row) => row.uid);

  /**
   * The machine behind one server is lost while accepted events wait for event-ingest (both
   * replicas down): the server that leads SVC_EVENTS_INCOMING is killed (SIGKILL) and comes
   * back with an empty disk. Returns, per worker, the accepted events and those stored once
   * event-ingest is back and the incoming queue is empty.
   */
  async function loseAServerWithEventsWaiting(ingestEnv: Record<string, string> = {}) {
    const workers = await Promise.all(Array.from({ length: 4 }, () => stack.createWorker(OWNER)));
    await Promise.all(stack.ingest.map((replica) => replica.kill()));
    const accepted = await Promise.all(workers.map((worker) => post(worker, 5)));
    expect((await jsm.streams.info(streams.incomingEvents.name)).state.messages).toBeGreaterThan(0);
    const lost = stack.nats.servers.get(await leaderOf(streams.incomingEvents.name))!;
    await lost.kill();
    await lost.restart({ wipeStore: true });
    for (let index = 0; index < INGEST_REPLICAS; index++) stack.ingest[index] = stack.startIngestReplica(index, ingestEnv);
    const storedCount = async () =>
      Number(
        (await database.query<{ count: string }>('select count(*) from events where worker_id = any($1)', [workers.map((w) => w.worker_id)])).rows[0]!.count,
      );
    const queueEmpty = async () => (await jsm.streams.info(streams.incomingEvents.name).catch(() => undefined))?.state.messages === 0;
    await waitFor(
      'every accepted event stored, or the incoming queue empty',
      async () => (await storedCount()) >= accepted.flat().length || (await queueEmpty()),
      60_000,
      200,
    ).catch(async (err: unknown) => {
      const info = await jsm.streams.info(streams.incomingEvents.name).catch((e: unknown) => e);
      throw new Error(`${String(err)}: ${await storedCount()} stored\n${JSON.stringify(info)}\n${stack.outputs()}`);
    });
    // What was in the queue is stored within a moment of its leaving it.
    await sleep(STORED_AFTER_QUEUE_MS);
    const results = [];
    for (const [index, worker] of workers.entries()) results.push({ accepted: accepted[index]!, stored: await storedUids(worker.worker_id) });
    return results;
  }

  it('every stream and KV bucket is kept by 3 servers', async () => {
    for (const name of STREAMS) expect([name, await replicasOf(name)]).toEqual([name, 3]);
  });

  it('more replicas than servers (SVC_JETSTREAM_REPLICAS=5 on three): refused, saying which setting and what it needs; the streams stay at 3', async () => {
    await expect(ensureStreams(stack.nc, { replicas: 5 })).rejects.toThrow(
      /SVC_JETSTREAM_REPLICAS=5: NATS refused SVC_EVENTS_INCOMING with 5 replicas .*a cluster of at least 5 servers/,
    );
    for (const name of STREAMS) expect([name, await replicasOf(name)]).toEqual([name, 3]);
  });

  it('replicas 3: the server leading SVC_EVENTS_INCOMING killed (SIGKILL) under load and restarted — every 202’d event stored once, in order, and read so by every viewer and poller', async () => {
    const running = await startLoad(stack, { owner: OWNER, userToken: await stack.userToken(OWNER), sidecars: 10, viewers: 2, pollers: 2, intervalMs: 100 });
    await sleep(LOAD_PHASE_MS);
    const leader = await leaderOf(streams.incomingEvents.name);
    await stack.nats.servers.get(leader)!.kill();
    const newLeader = await leaderOf(streams.incomingEvents.name);
    await sleep(LOAD_PHASE_MS);
    await stack.nats.servers.get(leader)!.restart();
    await sleep(LOAD_PHASE_MS);
    await running.stopPosting();
    const accepted = running.sidecars.reduce((sum, s) => sum + s.accepted.length, 0);
    const failures = running.sidecars.flatMap((s) => s.failures);
    console.info(`nats cluster: ${leader} killed, ${newLeader} leads; ${accepted} events accepted, ${failures.length} POSTs retried`);
    expect(newLeader).not.toBe(leader);
    await expectEverythingOnceInOrder(stack, running);
    expect(unexpectedFailures(running)).toEqual([]);
  }, 180_000);

  it('replicas 3: a server lost with its disk while 202’d events wait for event-ingest — every one stored once, in order', async () => {
    for (const { accepted, stored } of await loseAServerWithEventsWaiting()) expect(stored).toEqual(accepted);
  }, 180_000);

  it('replicas 1 (event-ingest restarted with SVC_JETSTREAM_REPLICAS=1 scales the existing streams down): the same loss leaves 202’d events missing — the check above would catch it', async () => {
    const replicasOne = { SVC_JETSTREAM_REPLICAS: '1' };
    for (let index = 0; index < INGEST_REPLICAS; index++) {
      await stack.ingest[index]!.kill();
      stack.ingest[index] = stack.startIngestReplica(index, replicasOne);
    }
    // Every stream but the audit heads', which no service may update (only NATS's operator: docs/audit.md).
    for (const name of STREAMS.filter((stream) => stream !== streams.auditHeads.name))
      await waitFor(`${name} scaled down to 1 replica`, async () => (await replicasOf(name)) === 1, 30_000, 200);
    expect(await replicasOf(streams.auditHeads.name)).toBe(3);
    const results = await loseAServerWithEventsWaiting(replicasOne);
    const missing = results.flatMap(({ accepted, stored }) => accepted.filter((uid) => !stored.includes(uid)));
    console.info(`nats cluster, replicas 1: ${missing.length} of ${results.flatMap((r) => r.accepted).length} accepted events lost with the server`);
    expect(missing.length).toBeGreaterThan(0);
  }, 180_000);
});
