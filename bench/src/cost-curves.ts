/**
 * bench/cost-curves: how the cost of the work grows with the work, on the pipeline as deployed
 * (nats-server, Postgres with fsync on, every service its own process), each figure a table
 * and a chart (`--charts DIR` writes the SVGs; docs/charts holds the recorded ones):
 *
 *  1. workers: 10 … 10,000 active workers. Events/s with 50 posters round-robin over them
 *     (closed loop: each posts its next event once the last is answered), and POST → viewer
 *     latency at a fixed total rate (viewers on up to 100 of the workers).
 *  2. history: a worker's `GET …/sdk-events?after_id=` (100 events) and a WebSocket replay of
 *     its last 1,000 events, with 10 k, 1 M and 10 M events stored (the other workers' rows
 *     written straight into Postgres, as event-ingest would have).
 *  3. idle viewers: the gateway's resident memory with 1, 1,000 and 10,000 WebSocket viewers
 *     open and nothing happening.
 *  4. retention: POST → viewer latency at a fixed rate with and without purges of ended
 *     workers' events running (docs/event-ingest.md "Retention"), alternated, same run.
 *
 *   npm run build && node bench/dist/cost-curves.js [--only 1,2,3,4] [--seconds 5] [--rounds 3] [--charts docs/charts]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import WebSocket from 'ws';
import { requestJson } from '@svc/bus';
import { subjects, type CreateWorkerResultType, type PurgeEventsResultType, type StreamFrame } from '@svc/protocol';
import { measureDelivery, openViewer } from './delivery.js';
import { assistantEvent, BENCH_TEXT, call, percentile, type Pipeline, post, print, rssMiB, sleep, startPipeline, verdict } from './pipeline.js';
import { median } from './raw-insert.js';
import { writeChart } from './svg-chart.js';

const { values: args } = parseArgs({
  options: {
    only: { type: 'string', default: '1,2,3,4' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    'log-level': { type: 'string', default: 'warn' },
    /** Figure 1's worker counts. */
    workers: { type: 'string', default: '10,100,1000,10000' },
    /** Figure 1's and 4's fixed total rate, events/s. */
    rate: { type: 'string', default: '1000' },
    /** Figure 2's stored-event counts. */
    history: { type: 'string', default: '10000,1000000,10000000' },
    /** Figure 3's viewer counts. */
    viewers: { type: 'string', default: '1,1000,10000' },
    /** Figure 4's ended workers (20,000 events each): enough for purges to run through every round. */
    ended: { type: 'string', default: '100' },
    /** Write each figure's chart here. */
    charts: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const RATE = Number(args.rate);
const POSTERS = 50;
const VIEWED_WORKERS = 100;
const counts = (list: string) => list.split(',').map(Number);

const event = assistantEvent;
const STORED_DATA = JSON.stringify({ text: BENCH_TEXT, message_id: 'msg_bench' });

async function chart(name: string, title: string, xLabel: string, yLabel: string, series: Array<{ name: string; points: Array<[number, number]> }>) {
  if (args.charts) await writeChart(args.charts, name, { title, xLabel, yLabel, series });
}

/** Creates `count` workers, 50 at a time. */
async function createWorkers(pipeline: Pipeline, count: number): Promise<CreateWorkerResultType[]> {
  const workers: CreateWorkerResultType[] = [];
  while (workers.length < count)
    workers.push(...(await Promise.all(Array.from({ length: Math.min(50, count - workers.length) }, () => pipeline.createWorker()))));
  return workers;
}

/** `POSTERS` loops, each posting single events one after another over its share of the workers, for SECONDS: events/s answered 202. */
async function closedLoop(pipeline: Pipeline, workers: CreateWorkerResultType[]): Promise<number> {
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  let posted = 0;
  await Promise.all(
    Array.from({ length: POSTERS }, async (_, poster) => {
      for (let n = poster; performance.now() < deadline; n += POSTERS) {
        const worker = workers[n % workers.length]!;
        await post(pipeline, worker, event(`${worker.worker_id}:loop:${n}`));
        posted++;
      }
    }),
  );
  return posted / ((performance.now() - started) / 1000);
}

/** 1. Events/s and viewer latency as the number of active workers grows. */
async function workerCurve(pipeline: Pipeline) {
  const sizes = counts(args.workers);
  const all = await createWorkers(pipeline, Math.max(...sizes));
  const rows: Array<{ workers: number; rate: number; p50: number; p99: number; missing: number }> = [];
  for (const size of sizes) {
    const workers = all.slice(0, size);
    const rates: number[] = [];
    const p50s: number[] = [];
    const p99s: number[] = [];
    let missing = 0;
    for (let round = 0; round < ROUNDS; round++) {
      await pipeline.drained();
      rates.push(await closedLoop(pipeline, workers));
      await pipeline.drained();
      const delivery = await measureDelivery(pipeline, workers, {
        viewersPerWorker: 1,
        viewedWorkers: VIEWED_WORKERS,
        rate: RATE,
        seconds: SECONDS,
        eventOf: event,
      });
      p50s.push(delivery.p50);
      p99s.push(delivery.p99);
      missing += delivery.missing;
    }
    rows.push({ workers: size, rate: median(rates), p50: median(p50s), p99: median(p99s), missing });
  }
  print(
    `1. active workers: events/s with ${POSTERS} posters (closed loop), and POST → viewer at ${RATE} events/s (viewers on up to ${VIEWED_WORKERS} workers); median of ${ROUNDS} rounds of ${SECONDS}s`,
  );
  console.table(
    rows.map((r) => ({
      workers: r.workers,
      'events/s': Math.round(r.rate),
      'viewer p50 ms': r.p50.toFixed(2),
      'viewer p99 ms': r.p99.toFixed(2),
      missing: r.missing,
    })),
  );
  await chart('cost-workers', 'Active workers: throughput and viewer latency', 'active workers', 'events/s · p99 ms × 100', [
    { name: 'events/s', points: rows.map((r) => [r.workers, r.rate]) },
    { name: 'viewer p99 × 100', points: rows.map((r) => [r.workers, r.p99 * 100]) },
  ]);
  const at = (size: number) => rows.find((r) => r.workers === size);
  const [hundred, most] = [at(100), rows.at(-1)];
  if (hundred && most && most !== hundred) {
    verdict(`events/s at ${most.workers} / at 100 workers`, most.rate / hundred.rate, '≥', 0.8);
    verdict(`viewer p99 at ${most.workers} / at 100 workers`, most.p99 / hundred.p99, '≤', 2);
  }
}

/** Inserts filler events (other workers', 10,000 each) until the table holds `total` rows, 1 M rows per statement. */
async function growEventsTo(client: pg.Client, total: number): Promise<void> {
  for (;;) {
    const have = Number((await client.query<{ n: string }>('select count(*) as n from events')).rows[0]!.n);
    if (have >= total) break;
    const rows = Math.min(1_000_000, total - have);
    const started = performance.now();
    await client.query(
      `insert into events (worker_id, id, uid, type, ts, data)
       select 'filler-' || (($1::bigint + g) / 10000), (($1::bigint + g) % 10000) + 1, 'filler:' || ($1::bigint + g), 'assistant', now(), $3::jsonb
       from generate_series(0, $2::bigint - 1) g`,
      [have, rows, STORED_DATA],
    );
    process.stdout.write(`  stored ${have + rows} events (${((performance.now() - started) / 1000).toFixed(1)} s for ${rows})\n`);
  }
  await client.query('vacuum analyze events');
}

/** Opens a stream after `afterId` and resolves with the ms until it is live (the replay sent). */
function replayTime(pipeline: Pipeline, workerId: string, afterId: number): Promise<{ ms: number; events: number }> {
  const started = performance.now();
  let events = 0;
  const socket = new WebSocket(`${pipeline.gatewayUrl.replace('http', 'ws')}/v1/workers/${workerId}/sdk-events/stream?after_id=${afterId}`, {
    headers: { authorization: `Bearer ${pipeline.userToken}` },
  });
  return new Promise((resolve, reject) => {
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as StreamFrame;
      if (frame.kind !== 'live') return void events++;
      resolve({ ms: performance.now() - started, events });
      socket.close();
    });
    socket.once('error', reject);
  });
}

/** 2. A worker's reads with more and more events stored. */
async function historyCurve(pipeline: Pipeline) {
  const client = new pg.Client({ connectionString: pipeline.postgresUrl });
  client.on('error', () => {}); // The pipeline stopping under it after a failure: the failure is what to read.
  await client.connect();
  const worker = await pipeline.createWorker();
  const own = 10_000;
  for (let from = 0; from < own; from += 100) {
    await post(pipeline, worker, { events: Array.from({ length: 100 }, (_, i) => event(`${worker.worker_id}:h${from + i}`)) });
  }
  await pipeline.drained();
  const rows: Array<{ stored: number; getP50: number; getP99: number; replayP50: number; replayP99: number; bytesPerEvent: number }> = [];
  for (const size of counts(args.history)) {
    await growEventsTo(client, size);
    const gets: number[] = [];
    for (let n = 0; n < 500; n++) {
      const afterId = Math.floor(Math.random() * (own - 100));
      const started = performance.now();
      const answer = await call(`${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events?after_id=${afterId}&limit=100`, {
        token: pipeline.userToken,
      });
      if (answer.status !== 200) throw new Error(`GET sdk-events answered ${answer.status}`);
      gets.push(performance.now() - started);
    }
    const replays: number[] = [];
    for (let n = 0; n < 30; n++) replays.push((await replayTime(pipeline, worker.worker_id, own - 1000)).ms);
    const size_ = (await client.query<{ bytes: string; n: string }>("select pg_total_relation_size('events') as bytes, (select count(*) from events) as n"))
      .rows[0]!;
    gets.sort((a, b) => a - b);
    replays.sort((a, b) => a - b);
    rows.push({
      stored: size,
      getP50: percentile(gets, 50),
      getP99: percentile(gets, 99),
      replayP50: percentile(replays, 50),
      replayP99: percentile(replays, 99),
      bytesPerEvent: Number(size_.bytes) / Number(size_.n),
    });
  }
  await client.end();
  print(`2. history: GET after_id (100 events, 500 reads) and a WebSocket replay of the last 1,000 events (30 opens) of one worker, by events stored`);
  console.table(
    rows.map((r) => ({
      'events stored': r.stored,
      'GET p50 ms': r.getP50.toFixed(2),
      'GET p99 ms': r.getP99.toFixed(2),
      'replay p50 ms': r.replayP50.toFixed(1),
      'replay p99 ms': r.replayP99.toFixed(1),
      'table bytes/event': Math.round(r.bytesPerEvent),
    })),
  );
  await chart('cost-history', 'Reads of one worker as the store grows', 'events stored', 'ms', [
    { name: 'GET after_id p99', points: rows.map((r) => [r.stored, r.getP99]) },
    { name: 'replay 1,000 p99 ÷ 10', points: rows.map((r) => [r.stored, r.replayP99 / 10]) },
  ]);
  if (rows.length > 1) verdict(`GET after_id p99 at ${rows.at(-1)!.stored} / at ${rows[0]!.stored}`, rows.at(-1)!.getP99 / rows[0]!.getP99, '≤', 1.5);
}

/** 3. The gateway's memory with many idle viewers. */
async function idleViewerCurve(pipeline: Pipeline) {
  const workers = await createWorkers(pipeline, 100);
  const rows: Array<{ viewers: number; rss: number; perViewer: number }> = [];
  for (const count of counts(args.viewers)) {
    await sleep(2000);
    const before = await rssMiB(pipeline.gateway.pid);
    const sockets: WebSocket[] = [];
    for (let opened = 0; opened < count; opened += 100) {
      sockets.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(100, count - opened) }, (_, i) => openViewer(pipeline, workers[(opened + i) % workers.length]!.worker_id, () => {})),
        )),
      );
    }
    await sleep(3000);
    const rss = await rssMiB(pipeline.gateway.pid);
    rows.push({ viewers: count, rss, perViewer: ((rss - before) * 1024) / count });
    for (const socket of sockets) socket.close();
  }
  print('3. idle viewers: the gateway’s resident memory with the viewers open (each a WebSocket stream of one of 100 workers, nothing posted)');
  console.table(rows.map((r) => ({ viewers: r.viewers, 'gateway RSS MiB': r.rss.toFixed(0), 'KiB per viewer (over the RSS before)': r.perViewer.toFixed(1) })));
  await chart('cost-idle-viewers', 'Gateway memory with idle viewers', 'idle viewers', 'RSS MiB', [
    { name: 'gateway RSS', points: rows.map((r) => [r.viewers, r.rss]) },
  ]);
}

/** 4. Deleting ended workers' events while events flow: latency with and without. */
async function retentionCost(pipeline: Pipeline) {
  const client = new pg.Client({ connectionString: pipeline.postgresUrl });
  client.on('error', () => {});
  await client.connect();
  const perWorker = 20_000;
  const endedWorkers = Number(args.ended);
  print(`4. retention: storing ${endedWorkers} ended workers' ${perWorker} events each`);
  await client.query(
    `insert into events (worker_id, id, uid, type, ts, data)
     select 'ended-' || (g / $1::int), (g % $1::int) + 1, 'ended:' || g, 'assistant', now(), $3::jsonb from generate_series(0, $1::int * $2::int - 1) g`,
    [perWorker, endedWorkers, STORED_DATA],
  );
  await client.query('vacuum analyze events');
  await client.end();
  const workers = await createWorkers(pipeline, VIEWED_WORKERS);
  let next = 0;
  let deleted = 0;
  let deletingMs = 0;
  const measure = async (withPurges: boolean) => {
    await pipeline.drained();
    let purging = withPurges;
    const purges = (async () => {
      while (purging && next < endedWorkers) {
        const started = performance.now();
        const result = await requestJson<PurgeEventsResultType>(
          pipeline.nc,
          subjects.rpc.purgeEvents,
          { worker_id: `ended-${next++}` },
          { timeoutMs: 600_000 },
        );
        deleted += result.deleted;
        deletingMs += performance.now() - started;
      }
    })();
    const delivery = await measureDelivery(pipeline, workers, { viewersPerWorker: 1, rate: RATE, seconds: SECONDS, eventOf: event });
    purging = false;
    await purges;
    return delivery;
  };
  // A first round unmeasured: the rows just written are still being checkpointed.
  await measure(false);
  const rounds: Array<{ without: { p50: number; p99: number }; with: { p50: number; p99: number } }> = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push({ without: await measure(false), with: await measure(true) });
  const ratio = (r: (typeof rounds)[number]) => r.with.p99 / r.without.p99;
  const middle = [...rounds].sort((a, b) => ratio(a) - ratio(b))[Math.floor(rounds.length / 2)]!;
  print(
    `   POST → viewer at ${RATE} events/s over ${VIEWED_WORKERS} workers, ${SECONDS}s each, rounds alternating; median of ${ROUNDS} (p99 ratios ${rounds.map((r) => ratio(r).toFixed(2)).join(', ')})`,
  );
  console.table([
    { purges: 'none', 'p50 ms': middle.without.p50.toFixed(2), 'p99 ms': middle.without.p99.toFixed(2) },
    { purges: 'running', 'p50 ms': middle.with.p50.toFixed(2), 'p99 ms': middle.with.p99.toFixed(2) },
  ]);
  process.stdout.write(`deleted ${deleted} events of ${next} workers while measuring: ${Math.round(deleted / (deletingMs / 1000))} events/s\n`);
  verdict('viewer p99 with purges / without', ratio(middle), '≤', 1.2);
}

async function main() {
  const pipeline = await startPipeline({ logLevel: args['log-level'] });
  try {
    print(`bench/cost-curves — ${new Date().toISOString()}`);
    const figures = [workerCurve, historyCurve, idleViewerCurve, retentionCost];
    for (const figure of counts(args.only).map((n) => figures[n - 1])) {
      await figure?.(pipeline);
      await pipeline.drained();
    }
  } finally {
    await pipeline.stop();
  }
}

await main();
