/**
 * bench/scale-out: the write path with one gateway and one event-ingest replica beside the same
 * with two of each (each pipeline its own nats-server and Postgres, both started, rounds
 * alternating between them, same machine), so the design is seen not to serialize on one
 * process (docs/scale-out.md):
 *
 *  1. single-event POSTs, durable: req/s, 50 connections over the gateways (autocannon);
 *  2. batched POSTs (100 events) by 10 writers over the gateways: events/s stored;
 *  3. POST → WebSocket viewer at a fixed rate over 100 workers, posts and viewers spread over
 *     the gateways (a viewer often on another gateway than its worker's POSTs).
 *
 *   npm run build && node bench/dist/scale-out.js [--seconds 5] [--rounds 3] [--rate 500]
 *
 * On this 2-core machine two of each cannot add CPU, only show that nothing waits on one
 * process: the figures should hold, not double.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { partitionOfWorker, type CreateWorkerResultType } from '@svc/protocol';
import { measureDelivery } from './delivery.js';
import { runLoad } from './load-client.js';
import { assistantEvent, type Pipeline, postBatchesUntil, print, startPipeline, verdict } from './pipeline.js';
import { median } from './raw-insert.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    rate: { type: 'string', default: '500' },
    'log-level': { type: 'string', default: 'warn' },
  },
});
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const RATE = Number(args.rate);
const CONNECTIONS = 50;
const WRITERS = 10;
const BATCH = 100;

const event = assistantEvent;

interface Shape {
  name: string;
  pipeline: Pipeline;
  /** Two workers for figure 1 (on partitions of different ingest replicas when there are two). */
  posters: CreateWorkerResultType[];
  viewed: CreateWorkerResultType[];
}

/** Workers until two land on partitions of different replicas (partition mod 2), so two replicas both work in figure 1. */
async function twoPosters(pipeline: Pipeline): Promise<CreateWorkerResultType[]> {
  const byParity = new Map<number, CreateWorkerResultType>();
  while (byParity.size < 2) {
    const worker = await pipeline.createWorker();
    byParity.set(partitionOfWorker(worker.worker_id) % 2, worker);
  }
  return [...byParity.values()];
}

/** 1. req/s of single-event POSTs: the connections split over two workers, each on a gateway (round-robin). */
async function singlePosts(shape: Shape): Promise<number> {
  await shape.pipeline.drained();
  const gateways = shape.pipeline.gatewayUrls;
  const results = await Promise.all(
    shape.posters.map((worker, index) =>
      runLoad(`${gateways[index % gateways.length]}/v1/workers/${worker.worker_id}/sdk-events`, {
        seconds: String(SECONDS),
        connections: String(CONNECTIONS / shape.posters.length),
        method: 'POST',
        body: JSON.stringify(event(`${worker.worker_id}:[<id>]`)),
        pin: false,
        headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
      }),
    ),
  );
  return results.reduce((sum, result) => sum + result.requests.average, 0);
}

/** 2. Events/s stored of 100-event batches by 10 writers, each on a gateway (round-robin), counted until committed. */
async function batches(shape: Shape): Promise<number> {
  const { pipeline } = shape;
  await pipeline.drained();
  const workers = await Promise.all(Array.from({ length: WRITERS }, () => pipeline.createWorker()));
  const started = performance.now();
  const gateways = pipeline.gatewayUrls;
  await Promise.all(
    workers.map((worker, index) =>
      postBatchesUntil({ ...pipeline, gatewayUrl: gateways[index % gateways.length]! }, [worker], started + SECONDS * 1000, BATCH, event),
    ),
  );
  await pipeline.drained();
  const client = new pg.Client({ connectionString: pipeline.postgresUrl });
  await client.connect();
  try {
    const ids = workers.map((w) => w.worker_id);
    const stored = Number((await client.query<{ n: string }>('select count(*) as n from events where worker_id = any($1)', [ids])).rows[0]!.n);
    return stored / ((performance.now() - started) / 1000);
  } finally {
    await client.end();
  }
}

/** 3. POST → viewer latency at RATE over 100 workers, posts and viewers spread over the gateways. */
async function latency(shape: Shape): Promise<{ p50: number; p99: number }> {
  await shape.pipeline.drained();
  return measureDelivery(shape.pipeline, shape.viewed, {
    viewersPerWorker: 1,
    rate: RATE,
    seconds: SECONDS,
    eventOf: event,
    gatewayUrls: shape.pipeline.gatewayUrls,
  });
}

async function main() {
  const shapes: Shape[] = [];
  try {
    for (const [name, gateways, replicas] of [
      ['1 gateway, 1 event-ingest', 1, 1],
      ['2 gateways, 2 event-ingest', 2, 2],
    ] as const) {
      const pipeline = await startPipeline({ logLevel: args['log-level'], ingestReplicas: replicas, moreGateways: gateways > 1 ? [{}] : [] });
      shapes.push({
        name,
        pipeline,
        posters: await twoPosters(pipeline),
        viewed: await Promise.all(Array.from({ length: 100 }, () => pipeline.createWorker())),
      });
    }
    const results = new Map(shapes.map((shape) => [shape.name, { posts: [] as number[], stored: [] as number[], p50: [] as number[], p99: [] as number[] }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const shape of shapes) {
        const result = results.get(shape.name)!;
        result.posts.push(await singlePosts(shape));
        result.stored.push(await batches(shape));
        const delivered = await latency(shape);
        result.p50.push(delivered.p50);
        result.p99.push(delivered.p99);
      }
    }
    print(`bench/scale-out: median of ${ROUNDS} rounds of ${SECONDS}s, alternating; figure 3 at ${RATE} events/s over 100 workers`);
    const rows = shapes.map((shape) => {
      const r = results.get(shape.name)!;
      return { shape: shape.name, posts: median(r.posts), stored: median(r.stored), p50: median(r.p50), p99: median(r.p99) };
    });
    console.table(
      rows.map((r) => ({
        shape: r.shape,
        '1. single POSTs req/s': Math.round(r.posts),
        '2. batched events/s stored': Math.round(r.stored),
        '3. viewer p50 ms': r.p50.toFixed(2),
        '3. viewer p99 ms': r.p99.toFixed(2),
      })),
    );
    const [one, two] = rows as [(typeof rows)[number], (typeof rows)[number]];
    verdict('1. single POSTs, two of each / one of each', two.posts / one.posts, '≥', 1);
    verdict('2. batched events stored, two of each / one of each', two.stored / one.stored, '≥', 1);
    verdict('3. viewer p99, two of each / one of each', two.p99 / one.p99, '≤', 1);
  } finally {
    await Promise.all(shapes.map((shape) => shape.pipeline.stop()));
  }
}

await main();
