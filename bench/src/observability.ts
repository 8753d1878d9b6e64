/**
 * bench/observability: what tracing costs the write path. The pipeline as deployed (every service
 * its own process, nats-server, Postgres with fsync), started alternately with tracing off and on
 * (every service exporting its sampled spans over OTLP/HTTP to a receiver stand-in in this process,
 * which counts and drops them), measuring in each:
 *
 *  1. the gateway's req/s: single-event durable POSTs (autocannon, as bench/ingest figure 1);
 *  2. ingest's events/s: batches of 100 events POSTed by 10 writers until stored.
 *
 * Metrics are on in both (they cannot be turned off; their own cost was measured against a build
 * without them: docs/benchmarks.md). Target: on ≥ 0.9 × off for both.
 *
 *   npm run build && node bench/dist/observability.js [--seconds 5] [--rounds 3] [--sample-percent 100]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { IncomingEvent } from '@svc/protocol';
import { startOtlpReceiver } from '@svc/test-support/stand-ins';
import { waitFor } from '@svc/test-support';
import { runLoad } from './load-client.js';
import { postBatchesUntil, print, startPipeline, verdict, type Pipeline } from './pipeline.js';
import { median } from './raw-insert.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '50' },
    /** The services' SVC_OTEL_TRACES_SAMPLE_PERCENT with tracing on (default: theirs, 10). */
    'sample-percent': { type: 'string' },
  },
});
const SAMPLE = args['sample-percent'];
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const BATCH = 100;
const WRITERS = 10;

const TEXT = 'The tests pass now. I changed the parser to keep the raw line when a field is missing. ';
const event = (uid: string): IncomingEvent => ({ type: 'assistant', uid, ts: new Date().toISOString(), data: { text: TEXT, message_id: 'msg_bench' } });

/** 1. Single-event durable POSTs per second. */
async function requestsPerSecond(pipeline: Pipeline): Promise<number> {
  const worker = await pipeline.createWorker();
  const target = `${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`;
  const options = {
    connections: args.connections,
    method: 'POST' as const,
    body: JSON.stringify(event('bench:[<id>]')),
    pin: false,
    headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
  };
  await runLoad(target, { ...options, seconds: '2' }); // warm-up
  await pipeline.drained();
  const result = await runLoad(target, { ...options, seconds: String(SECONDS) });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} answers were not 2xx, ${result.errors} failed`);
  await pipeline.drained();
  return result.requests.average;
}

/** 2. Events per second, POSTed in batches until stored. */
async function storedPerSecond(pipeline: Pipeline): Promise<number> {
  const client = new pg.Pool({ connectionString: pipeline.postgresUrl, max: 2 });
  try {
    const workers = await Promise.all(Array.from({ length: WRITERS }, () => pipeline.createWorker()));
    const started = performance.now();
    const posted = await postBatchesUntil(pipeline, workers, started + SECONDS * 1000, BATCH, event);
    const ids = workers.map((w) => w.worker_id);
    const stored = async () => Number((await client.query<{ n: string }>('select count(*) as n from events where worker_id = any($1)', [ids])).rows[0]!.n);
    await waitFor('every posted event stored', async () => (await stored()) === posted, 120_000, 10);
    return posted / ((performance.now() - started) / 1000);
  } finally {
    await client.end();
  }
}

async function main() {
  const receiver = await startOtlpReceiver({ keepSpans: false });
  const figures = { off: { rps: [] as number[], eps: [] as number[] }, on: { rps: [] as number[], eps: [] as number[] } };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating, and in the other order every other round: the machine's drift falls on both.
      const order: Array<'off' | 'on'> = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const mode of order) {
        const pipeline = await startPipeline({
          logLevel: 'warn',
          env: mode === 'on' ? { SVC_OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...(SAMPLE ? { SVC_OTEL_TRACES_SAMPLE_PERCENT: SAMPLE } : {}) } : {},
        });
        try {
          figures[mode].rps.push(await requestsPerSecond(pipeline));
          figures[mode].eps.push(await storedPerSecond(pipeline));
        } finally {
          await pipeline.stop();
        }
        process.stdout.write(
          `round ${round + 1}, tracing ${mode}: ${Math.round(figures[mode].rps.at(-1)!)} req/s, ${Math.round(figures[mode].eps.at(-1)!)} events/s stored\n`,
        );
      }
    }
  } finally {
    await receiver.close();
  }
  const { requests, bytes } = receiver.exports();
  if (requests === 0 && SAMPLE !== '0') throw new Error('tracing on sent no spans to the receiver: the figures would compare nothing');
  print(
    `observability: tracing off vs on (sampling ${SAMPLE ?? 'the default, 10'} %, spans exported to an OTLP/HTTP stand-in: ${requests} exports, ${(bytes / 2 ** 20).toFixed(1)} MiB), ${SECONDS}s per figure, median of ${ROUNDS} rounds`,
  );
  const row = (figure: string, off: number[], on: number[]) => ({
    figure,
    'tracing off': Math.round(median(off)),
    'tracing on': Math.round(median(on)),
    'on / off': (median(on) / median(off)).toFixed(2),
  });
  console.table([row('single-event POST, req/s', figures.off.rps, figures.on.rps), row('batched POSTs, stored events/s', figures.off.eps, figures.on.eps)]);
  verdict('gateway req/s, tracing on / off', median(figures.on.rps) / median(figures.off.rps), '≥', 0.9);
  verdict('stored events/s, tracing on / off', median(figures.on.eps) / median(figures.off.eps), '≥', 0.9);
}

await main();
