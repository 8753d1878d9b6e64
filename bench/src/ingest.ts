/**
 * bench/ingest: the event pipeline as deployed — nats-server, Postgres (fsync on), and
 * event-ingest, session, control and gateway each as its own process from its built `main.js` — with
 * four figures, each beside its baseline or target:
 *
 *  1. single-event POST, durable (answered after the JetStream ack), req/s against a bare
 *     Fastify no-op POST with the same body, same client (autocannon), same run;
 *  2. batched POSTs (100 events each): stored events/s (POST until committed in Postgres)
 *     against raw multi-row INSERTs of 100 rows with the same concurrency, same Postgres;
 *  3. POST → WebSocket viewer latency at a steady 2,000 events/s over 100 workers, beside the
 *     round trip of a bare Fastify no-op POST from the same client at the same rate (median of
 *     the rounds' p50 and p99);
 *  4. 500 viewers of one worker on one gateway: delivery latency and the gateway's RSS.
 *
 *   npm run build && node bench/dist/ingest.js [--seconds 10] [--rounds 5] [--log-level info] [--only 1,2,3,4] [--rate 2000] [--stages] [--profile DIR]
 *
 * Nothing is pinned to a CPU: the services share the machine's cores as they would a node's.
 */
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import pg from 'pg';
import { jetstreamManager } from '@nats-io/jetstream';
import {
  streams,
  subjects,
  type IncomingEvent,
  type IncomingEventBatchMessageType,
  type IncomingEventMessageType,
  type StoredEventBatchType,
} from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { atRate, measureDelivery } from './delivery.js';
import { runLoad, type LoadResult } from './load-client.js';
import {
  agent,
  assistantEvent,
  call,
  cpuSeconds,
  cpuShares,
  percentile,
  type Pipeline,
  postBatchesUntil,
  print,
  rssMiB,
  sleep,
  startPipeline,
  verdict,
  wakeUps,
} from './pipeline.js';
import { median, rawInsertSql, rawParameters } from './raw-insert.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '5' },
    'log-level': { type: 'string', default: 'info' },
    /** Run only these figures, e.g. `--only 2,3`. */
    only: { type: 'string', default: '1,2,3,4' },
    /** Events per second of figure 3 (the target is stated for 2,000). */
    rate: { type: 'string', default: '2000' },
    /**
     * Figure 3 also times each event's stages, seen from this process: its JetStream publish (a
     * subscription on the incoming subjects), the 202, its stored announcement, the viewer.
     * The two extra subscriptions cost this process CPU; use at low rates to see the floor.
     */
    stages: { type: 'boolean', default: false },
    /** Write a CPU profile of each service into this directory. */
    profile: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const BATCH = 100;
const BATCH_WRITERS = 10;
const LATENCY_WORKERS = 100;
const LATENCY_RATE = Number(args.rate);
const FAN_OUT_VIEWERS = 500;
const FAN_OUT_RATE = 50;

const event = assistantEvent;

/** The baseline of figures 1 and 3: a bare Fastify no-op POST answering as the route does (202). */
async function startBareServer(): Promise<{ url: string; close(): Promise<void> }> {
  const bare = Fastify();
  bare.post('/noop', async (_request, reply) => reply.code(202).send({ accepted: 1 }));
  const url = await bare.listen({ host: '127.0.0.1', port: 0 });
  return { url: `${url}/noop`, close: () => bare.close() };
}

/**
 * How many Postgres commits and JetStream messages (incoming, stored announcements) the events
 * became so far: two readings around a run tell how group commit gathered them.
 */
async function writeCounter(pipeline: Pipeline) {
  const database = new pg.Client({ connectionString: pipeline.postgresUrl });
  await database.connect();
  const jsm = await jetstreamManager(pipeline.nc);
  const read = async () => {
    const [commits, incoming, announced] = await Promise.all([
      database.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = current_database()').then((r) => Number(r.rows[0]!.n)),
      jsm.streams.info(streams.incomingEvents.name).then((info) => info.state.last_seq),
      jsm.streams.info(streams.storedEvents.name).then((info) => info.state.last_seq),
    ]);
    return { commits, incoming, announced };
  };
  type Counts = Awaited<ReturnType<typeof read>>;
  return {
    read,
    /** The counts between two readings, per second. */
    perSecond: (before: Counts, after: Counts, seconds: number) => ({
      'Postgres commits/s': Math.round((after.commits - before.commits) / seconds),
      'JetStream messages/s (incoming)': Math.round((after.incoming - before.incoming) / seconds),
      'JetStream messages/s (stored announcements)': Math.round((after.announced - before.announced) / seconds),
    }),
    close: () => database.end(),
  };
}

/** Each process's CPU per request in one load run, µs (two `cpuSeconds` readings inside the run). */
type CpuPerRequest = Map<string, number>;

/** 1. Single-event durable POST vs a bare Fastify no-op POST. */
async function singlePost(pipeline: Pipeline) {
  const bare = await startBareServer();
  const worker = await pipeline.createWorker();
  const body = JSON.stringify(event('bench:[<id>]'));
  const counter = await writeCounter(pipeline);
  const benchProcess = 'bare Fastify (the bench process)';
  // Every run starts with the store caught up, so no run pays for the previous one's backlog.
  // Each process's CPU and the writes are read inside the run (from a second after its start to
  // a second before its end): what the machine's two cores were spent on, per request.
  const load = async (url: string) => {
    await pipeline.drained();
    const running = runLoad(url, {
      seconds: String(SECONDS),
      connections: args.connections,
      method: 'POST',
      body,
      pin: false,
      headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
    });
    await sleep(1000);
    const [before, countsBefore] = await Promise.all([cpuSeconds(pipeline, { benchProcess }), counter.read()]);
    const from = performance.now();
    await sleep((SECONDS - 2) * 1000);
    const [after, countsAfter] = await Promise.all([cpuSeconds(pipeline, { benchProcess }), counter.read()]);
    const seconds = (performance.now() - from) / 1000;
    const result = await running;
    const perRequest: CpuPerRequest = new Map(
      [...after].map(([name, used]) => [name, ((used - (before.get(name) ?? 0)) / seconds / result.requests.average) * 1e6]),
    );
    const writes = { 'POSTs/s': Math.round(result.requests.average), ...counter.perSecond(countsBefore, countsAfter, seconds) };
    return { result, perRequest, writes };
  };
  const target = `${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`;
  await load(bare.url);
  await load(target);
  const rounds: Array<{ bare: Awaited<ReturnType<typeof load>>; post: Awaited<ReturnType<typeof load>> }> = [];
  for (let round = 0; round < ROUNDS; round++) rounds.push({ bare: await load(bare.url), post: await load(target) });
  await bare.close();
  await counter.close();
  const ratio = (r: (typeof rounds)[number]) => r.post.result.requests.average / r.bare.result.requests.average;
  const middle = [...rounds].sort((a, b) => ratio(a) - ratio(b))[Math.floor(rounds.length / 2)]!;
  const row = (name: string, r: LoadResult) => ({
    route: name,
    'req/s': Math.round(r.requests.average),
    'p50 ms': r.latency.p50,
    'p99 ms': r.latency.p99,
    'non-2xx': r.non2xx,
  });
  print(
    `1. single-event POST: ${SECONDS}s per run, ${args.connections} connections, median of ${ROUNDS} rounds (ratios ${rounds.map((r) => ratio(r).toFixed(2)).join(', ')})`,
  );
  console.table([row('bare Fastify POST /noop', middle.bare.result), row('POST sdk-events (durable)', middle.post.result)]);
  const total = (cpu: CpuPerRequest) => [...cpu.values()].reduce((sum, used) => sum + used, 0);
  const names = [...new Set([...middle.post.perRequest.keys(), ...middle.bare.perRequest.keys()])].filter(
    (name) => (middle.post.perRequest.get(name) ?? 0) + (middle.bare.perRequest.get(name) ?? 0) >= 0.5,
  );
  const wholeMicroseconds = (value: number | undefined) => Math.round(value ?? 0);
  print("   CPU per request in that round (µs; the bench client is autocannon, the bare server runs in the bench's own process):");
  console.table([
    ...names
      .sort((a, b) => (middle.post.perRequest.get(b) ?? 0) - (middle.post.perRequest.get(a) ?? 0))
      .map((name) => ({
        process: name,
        'bare POST': wholeMicroseconds(middle.bare.perRequest.get(name)),
        'durable POST': wholeMicroseconds(middle.post.perRequest.get(name)),
      })),
    { process: 'all', 'bare POST': wholeMicroseconds(total(middle.bare.perRequest)), 'durable POST': wholeMicroseconds(total(middle.post.perRequest)) },
  ]);
  console.table([middle.post.writes]);
  // What the gateway's own work costs the ratio: were the gateway's CPU per POST only a bare
  // Fastify's, and the machine as busy as in the bare run, the rest (the client, nats-server,
  // event-ingest, Postgres) would allow this much.
  const bareServer = middle.bare.perRequest.get(benchProcess) ?? 0;
  const withoutGateway = total(middle.post.perRequest) - (middle.post.perRequest.get('gateway') ?? 0) + bareServer;
  print(
    `   with a gateway costing what bare Fastify does per request, the same machine load would give at most ${(total(middle.bare.perRequest) / withoutGateway).toFixed(2)}× bare`,
  );
  // And were the gateway free: what the client and the work behind the 202 alone allow.
  print(`   with a gateway costing nothing, at most ${(total(middle.bare.perRequest) / (withoutGateway - bareServer)).toFixed(2)}× bare`);
  verdict('durable POST / bare POST', ratio(middle), '≥', 0.5);
}

/** 2. Batches of 100 events: POSTed until stored, against raw multi-row INSERTs with the same concurrency. */
async function batched(pipeline: Pipeline) {
  const client = new pg.Pool({ connectionString: pipeline.postgresUrl, max: BATCH_WRITERS });
  const storedCount = async (workerIds: string[]) =>
    Number((await client.query<{ n: string }>('select count(*) as n from events where worker_id = any($1)', [workerIds])).rows[0]!.n);

  const pipelineRates: number[] = [];
  const acceptedRates: number[] = [];
  const rawRates: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const workers = await Promise.all(Array.from({ length: BATCH_WRITERS }, () => pipeline.createWorker()));
    const started = performance.now();
    const posted = await postBatchesUntil(pipeline, workers, started + SECONDS * 1000, BATCH, event);
    const ids = workers.map((w) => w.worker_id);
    acceptedRates.push(posted / ((performance.now() - started) / 1000));
    await waitFor('every posted event stored', async () => (await storedCount(ids)) === posted, 120_000, 10);
    pipelineRates.push(posted / ((performance.now() - started) / 1000));

    const rawStarted = performance.now();
    const rawDeadline = rawStarted + SECONDS * 1000;
    let inserted = 0;
    await Promise.all(
      Array.from({ length: BATCH_WRITERS }, async (_, writer) => {
        const workerId = `bench-raw-${round}-${writer}`;
        for (let n = 0; performance.now() < rawDeadline; n += BATCH) {
          const events = Array.from({ length: BATCH }, (_, i) => event(`${workerId}:${n + i}`));
          await client.query(rawInsertSql(BATCH), rawParameters(workerId, n + 1, events));
          inserted += BATCH;
        }
      }),
    );
    rawRates.push(inserted / ((performance.now() - rawStarted) / 1000));
  }
  await client.end();
  const stored = median(pipelineRates);
  const raw = median(rawRates);
  print(`2. batched POSTs (${BATCH} events each), ${BATCH_WRITERS} writers, ${SECONDS}s, median of ${ROUNDS} rounds`);
  console.table([
    { path: 'POST batches → accepted (202, durable in JetStream)', 'events/s': Math.round(median(acceptedRates)) },
    { path: 'POST batches → stored (until committed)', 'events/s': Math.round(stored) },
    { path: `raw pg INSERT of ${BATCH} rows`, 'events/s': Math.round(raw) },
  ]);
  verdict('stored events/s / raw INSERT events/s', stored / raw, '≥', 0.6);
}

/** Times each event's stages from the moment its POST starts, by uid (`--stages`). */
function stageClock(pipeline: Pipeline) {
  const started = new Map<string, number>();
  const stages = { published: [] as number[], answered: [] as number[], stored: [] as number[] };
  const decoder = new TextDecoder();
  const seen = (uid: string, into: number[]) => {
    const at = started.get(uid);
    if (at !== undefined) into.push(performance.now() - at);
  };
  const subscriptions = [
    // A single event, or a gathered message of several (group commit): each event's publish.
    pipeline.nc.subscribe(subjects.incomingAll, {
      callback: (_err, msg) => {
        const message = JSON.parse(decoder.decode(msg.data)) as IncomingEventMessageType | IncomingEventBatchMessageType;
        for (const one of 'events' in message ? message.events : [message]) seen((one.event as IncomingEvent).uid, stages.published);
      },
    }),
    pipeline.nc.subscribe(subjects.storedAll, {
      callback: (_err, msg) => (JSON.parse(decoder.decode(msg.data)) as StoredEventBatchType).events.forEach((stored) => seen(stored.uid, stages.stored)),
    }),
  ];
  return {
    posting: (uid: string) => started.set(uid, performance.now()),
    answered: (uid: string) => seen(uid, stages.answered),
    stop() {
      for (const subscription of subscriptions) subscription.unsubscribe();
    },
    report(viewer: number[]) {
      const row = (stage: string, values: number[]) => {
        const sorted = [...values].sort((a, b) => a - b);
        return { 'from the POST to': stage, events: sorted.length, 'p50 ms': percentile(sorted, 50).toFixed(2), 'p99 ms': percentile(sorted, 99).toFixed(2) };
      };
      console.table([
        row('its JetStream publish', stages.published),
        row('the 202', stages.answered),
        row('its stored announcement', stages.stored),
        row('the viewer', viewer),
      ]);
    },
  };
}

/**
 * Figure 3's baseline: the same client posting the same events at the same rate to a bare
 * Fastify no-op POST in this process (as in figure 1); the round trip of each, sorted.
 */
async function bareRoundTrips(rate: number): Promise<number[]> {
  const bare = await startBareServer();
  const times: number[] = [];
  await atRate(SECONDS, rate, async (n) => {
    const started = performance.now();
    const answer = await call(bare.url, { method: 'POST', token: 'bench', body: event(`bare:${n}`) });
    if (answer.status !== 202) throw new Error(`the bare server answered ${answer.status}`);
    times.push(performance.now() - started);
  });
  await bare.close();
  return times.sort((a, b) => a - b);
}

/** 3. POST → viewer latency at 2,000 events/s over 100 workers (one viewer each), beside a bare POST's round trip. */
async function latency(pipeline: Pipeline) {
  const workers = await Promise.all(Array.from({ length: LATENCY_WORKERS }, () => pipeline.createWorker()));
  // Single runs of the same build at the same rate spread widely at p50 on this machine
  // (docs/benchmarks.md#ingest): the verdict is on the median round's p50 and p99.
  const counter = await writeCounter(pipeline);
  const rounds = [];
  for (let round = 0; round < ROUNDS; round++) {
    const clock = args.stages ? stageClock(pipeline) : undefined;
    const baseline = await bareRoundTrips(LATENCY_RATE);
    // Read from the first POST on: each viewer's opening replays its worker's history (the rounds
    // before), which is not the cost of the events measured.
    const readings = () => Promise.all([cpuSeconds(pipeline, { machine: true }), wakeUps(pipeline), counter.read()]);
    let before: Awaited<ReturnType<typeof readings>> | undefined;
    let measuring = 0;
    const onLive = async () => {
      before = await readings();
      measuring = performance.now();
    };
    const result = await measureDelivery(pipeline, workers, { viewersPerWorker: 1, rate: LATENCY_RATE, seconds: SECONDS, clock, eventOf: event, onLive });
    const [cpuAfter, wakesAfter, countsAfter] = await readings();
    const seconds = (performance.now() - measuring) / 1000;
    const [cpuBefore, wakesBefore, countsBefore] = before!;
    const cpu = cpuShares(cpuBefore, cpuAfter, seconds, { before: wakesBefore, after: wakesAfter });
    const writes = { 'events/s': Math.round(result.sent / seconds), ...counter.perSecond(countsBefore, countsAfter, seconds) };
    clock?.stop();
    rounds.push({ baseline, result, cpu, writes, clock });
    await pipeline.drained();
  }
  const p50s = rounds.map((r) => r.result.p50);
  const p99s = rounds.map((r) => r.result.p99);
  await counter.close();
  const { baseline, result, cpu, writes, clock } = [...rounds].sort((a, b) => a.result.p50 - b.result.p50)[Math.floor(rounds.length / 2)]!;
  print(
    `3. POST → WebSocket viewer: ${LATENCY_RATE} events/s over ${LATENCY_WORKERS} workers, ${ROUNDS} rounds of ${SECONDS}s (p50 ${p50s.map((v) => v.toFixed(2)).join(', ')} ms; p99 ${p99s.map((v) => v.toFixed(1)).join(', ')} ms); the round of median p50:`,
  );
  console.table([
    {
      path: 'POST → its WebSocket viewer',
      events: result.sent,
      deliveries: result.deliveries,
      missing: result.missing,
      'p50 ms': result.p50.toFixed(2),
      'p99 ms': result.p99.toFixed(2),
      'max ms': result.max.toFixed(1),
    },
    {
      path: 'bare Fastify POST, round trip (same client and rate)',
      events: baseline.length,
      'p50 ms': percentile(baseline, 50).toFixed(2),
      'p99 ms': percentile(baseline, 99).toFixed(2),
      'max ms': (baseline.at(-1) ?? NaN).toFixed(1),
    },
  ]);
  clock?.report(result.latencies);
  // Which process is at 100 % of a core when the rate saturates the machine, or whether the
  // machine's cores are full with none of them there (sampled over the posting and the last deliveries).
  console.table(cpu);
  console.table([writes]);
  verdict('median p50 ms', median(p50s), '≤', 3);
  verdict('median p99 ms', median(p99s), '≤', 20);
}

/** 4. 500 viewers of one worker on one gateway: latency of every delivery and the gateway's peak RSS. */
async function fanOut(pipeline: Pipeline) {
  const worker = await pipeline.createWorker();
  const before = await rssMiB(pipeline.gateway.pid);
  let peak = before;
  const result = await measureDelivery(pipeline, [worker], {
    viewersPerWorker: FAN_OUT_VIEWERS,
    rate: FAN_OUT_RATE,
    seconds: SECONDS,
    eventOf: event,
    onTick: async () => {
      peak = Math.max(peak, await rssMiB(pipeline.gateway.pid));
    },
  });
  print(`4. ${FAN_OUT_VIEWERS} viewers of one worker: ${FAN_OUT_RATE} events/s for ${SECONDS}s`);
  console.table([
    {
      events: result.sent,
      deliveries: result.deliveries,
      missing: result.missing,
      'p50 ms': result.p50.toFixed(2),
      'p99 ms': result.p99.toFixed(2),
      'gateway RSS before MiB': before.toFixed(0),
      'gateway RSS peak MiB': peak.toFixed(0),
    },
  ]);
  verdict('p99 ms', result.p99, '≤', 50);
  verdict('gateway RSS MiB', peak, '≤', 300);
}

async function main() {
  const pipeline = await startPipeline({ logLevel: args['log-level'], profileDir: args.profile });
  try {
    print(`bench/ingest — gateway log level ${args['log-level']}`);
    const figures = [singlePost, batched, latency, fanOut];
    for (const figure of args.only.split(',').map((n) => figures[Number(n) - 1])) {
      await figure?.(pipeline);
      await pipeline.drained();
    }
  } finally {
    agent.destroy();
    await pipeline.stop();
  }
}

await main();
