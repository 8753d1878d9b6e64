import { jetstreamManager } from '@nats-io/jetstream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXAMPLE_EVENTS, streams, type CreateWorkerResultType, type IncomingEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { Poller, StreamViewer, type ReceivedEvents } from '../readers.js';
import { startStack, type E2eStack } from '../stack.js';

const WORKERS = 20;
const EVENTS_PER_WORKER = 500;
const VIEWERS = 5;
const POLLERS = 5;
const OWNER = 'e2e-user';
/** How long a crashed event-ingest replica stays down: its partitions' events wait in JetStream meanwhile. */
const REPLICA_DOWN_MS = 300;
/** How long the viewer that drops off stays away before it resumes from the last id it saw. */
const VIEWER_AWAY_MS = 200;
/** How a fake sidecar splits its events into POSTs: single events and batches of several sizes. */
const POST_SIZES = [1, 1, 1, 7, 1, 1, 40, 1, 1, 100, 1, 3];

/** The events a fake sidecar of `workerId` posts: every event type in turn, each with its own uid. */
function eventsOf(workerId: string): IncomingEvent[] {
  const examples = Object.values(EXAMPLE_EVENTS);
  return Array.from({ length: EVENTS_PER_WORKER }, (_, n) => ({ ...examples[n % examples.length]!, uid: `${workerId}:${n}` }) as IncomingEvent);
}

function inPosts(events: IncomingEvent[]): IncomingEvent[][] {
  const posts: IncomingEvent[][] = [];
  for (let at = 0, n = 0; at < events.length; n++) {
    const size = POST_SIZES[n % POST_SIZES.length]!;
    posts.push(events.slice(at, at + size));
    at += size;
  }
  return posts;
}

describe('the event pipeline end to end — every service its own process, real nats-server and Postgres', () => {
  let stack: E2eStack;
  let gatewayUrl: string;
  let userToken: string;

  beforeAll(async () => {
    stack = await startStack({ ingestReplicas: 2 });
    gatewayUrl = stack.gatewayUrl;
    userToken = await stack.userToken(OWNER);
  }, 120_000);

  afterAll(() => stack?.stop());

  async function post(workerId: string, token: string, events: IncomingEvent[]): Promise<void> {
    const body = events.length === 1 ? events[0] : { events };
    const response = await fetch(`${gatewayUrl}/v1/workers/${workerId}/sdk-events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (response.status !== 202) throw new Error(`POST sdk-events of ${workerId} answered ${response.status}: ${await response.text()}`);
    expect(await response.json()).toEqual({ accepted: events.length });
  }

  function expectEveryEventOnceInOrder(reader: ReceivedEvents, workers: CreateWorkerResultType[]): void {
    expect(reader.violations, reader.name).toEqual([]);
    for (const worker of workers) {
      const received = reader.byWorker.get(worker.worker_id) ?? [];
      expect(
        received.map((e) => e.uid),
        `${reader.name} ${worker.worker_id}`,
      ).toEqual(eventsOf(worker.worker_id).map((e) => e.uid));
    }
  }

  it(`${WORKERS} fake sidecars post ${WORKERS * EVENTS_PER_WORKER} events while ${VIEWERS} viewers and ${POLLERS} pollers read; event-ingest is SIGKILLed and restarted mid-run; every reader gets every event once, in order`, async () => {
    const workers = await Promise.all(Array.from({ length: WORKERS }, () => stack.createWorker(OWNER)));
    const workerIds = workers.map((w) => w.worker_id);
    const viewers = Array.from({ length: VIEWERS }, (_, i) => new StreamViewer(`viewer-${i}`, gatewayUrl, userToken));
    const pollers = Array.from({ length: POLLERS }, (_, i) => new Poller(`poller-${i}`, gatewayUrl, userToken));
    await Promise.all(viewers.map((viewer) => viewer.watch(workerIds)));
    for (const poller of pollers) poller.poll(workerIds, (workerId) => poller.received.count(workerId) >= EVENTS_PER_WORKER);

    // The disruptions, each at a point of the run: both replicas crash in turn and come back;
    // one viewer drops off and resumes from the last id it saw.
    let posted = 0;
    const disruptions: Array<{ at: number; run: () => Promise<void> }> = [
      { at: 2_500, run: () => crashAndRestart(0) },
      { at: 5_000, run: () => dropAndResume(viewers[0]!) },
      { at: 6_500, run: () => crashAndRestart(1) },
    ];
    const running: Promise<void>[] = [];
    const jsm = await jetstreamManager(stack.nc);
    async function crashAndRestart(replicaIndex: number) {
      await stack.ingest[replicaIndex]!.kill();
      await new Promise((resolve) => setTimeout(resolve, REPLICA_DOWN_MS));
      const restartedAt = Date.now();
      stack.ingest[replicaIndex] = stack.startIngestReplica(replicaIndex);
      // Back when its partition's consumer is new and pulling (it re-creates its consumers at start).
      await waitFor(
        `replica ${replicaIndex} consuming again`,
        async () => {
          const info = await jsm.consumers.info(streams.incomingEvents.name, `event-ingest-p${replicaIndex}`).catch(() => undefined);
          return info !== undefined && Date.parse(info.created) >= restartedAt - 1000 && info.num_waiting > 0;
        },
        30_000,
        50,
      );
    }
    async function dropAndResume(viewer: StreamViewer) {
      await viewer.disconnect();
      await new Promise((resolve) => setTimeout(resolve, VIEWER_AWAY_MS));
      await viewer.watch(workerIds);
    }

    await Promise.all(
      workers.map(async (worker) => {
        for (const events of inPosts(eventsOf(worker.worker_id))) {
          await post(worker.worker_id, worker.token, events);
          posted += events.length;
          // One disruption at a time: a replica is back before the other one crashes.
          while (disruptions[0] && posted >= disruptions[0].at) {
            const { run } = disruptions.shift()!;
            running.push((running.at(-1) ?? Promise.resolve()).then(run));
          }
        }
      }),
    );
    await Promise.all(running);
    expect(
      stack.ingest.every((replica) => !replica.output().includes('"level":50')),
      stack.outputs(),
    ).toBe(true);

    const everyReader = [...viewers, ...pollers].map((r) => r.received);
    await waitFor(
      'every reader to have every event',
      () => everyReader.every((reader) => workerIds.every((workerId) => reader.count(workerId) >= EVENTS_PER_WORKER)),
      90_000,
      100,
    ).catch((err: unknown) => {
      const short = everyReader.map((r) => `${r.name}: ${workerIds.reduce((sum, id) => sum + r.count(id), 0)}`).join(', ');
      throw new Error(`${String(err)} (${short})\n${stack.outputs()}`);
    });
    await Promise.all(pollers.map((poller) => poller.finished()));
    // A poll a replica's crash left unanswered is a 503/504 to ask again, never anything else.
    expect(pollers.flatMap((poller) => poller.failures).filter((failure) => failure.status !== 503 && failure.status !== 504)).toEqual([]);
    for (const reader of everyReader) expectEveryEventOnceInOrder(reader, workers);

    // Every uid posted again: nothing new is stored, nobody receives anything more.
    await Promise.all(
      workers.map(async (worker) => {
        const events = eventsOf(worker.worker_id);
        for (let at = 0; at < events.length; at += 100) await post(worker.worker_id, worker.token, events.slice(at, at + 100));
      }),
    );
    await waitFor('the incoming work queue to empty', async () => (await jsm.streams.info(streams.incomingEvents.name)).state.messages === 0, 30_000);
    const client = new pg.Client({ connectionString: stack.postgres.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ count: string }>('select count(*) from events');
      expect(Number(rows[0]!.count)).toBe(WORKERS * EVENTS_PER_WORKER);
    } finally {
      await client.end();
    }
    for (const viewer of viewers) {
      for (const workerId of workerIds) expect(viewer.received.count(workerId)).toBe(EVENTS_PER_WORKER);
      await viewer.disconnect();
    }
  }, 240_000);

  it('every service process stops cleanly on SIGTERM (exit 0)', async () => {
    const codes = await Promise.all(stack.processes().map(async (p) => [p.service, await p.stop()] as const));
    expect(codes).toEqual(stack.processes().map((p) => [p.service, 0]));
  });
});
