/**
 * bench/observability: what tracing costs the write path. The pipeline as deployed (every service
 * its own process, nats-server, Postgres with fsync), started alternately with tracing off and on
 * (every service exporting its sampled spans over OTLP/HTTP to a receiver stand-in in this process,
 * which counts and drops them), measuring:
 *
 *  1. the gateway's req/s (single-event durable POSTs, autocannon, as bench/ingest figure 1), two ways:
 *     a. the gateway's own cost: in the traced pipeline, a second gateway with tracing off beside
 *        the traced one, the same load on each in turn (short bursts, interleaved), so both meet
 *        the same nats-server, ingest and Postgres at the same moment of the same run;
 *     b. whole pipelines, traced and not, one after the other: the machine's drift between two
 *        pipelines (docs/benchmarks.md#how-to-read-these) falls into this one, so its spread is
 *        printed;
 *  2. ingest's events/s: batches of 100 events POSTed by 10 writers until stored, whole pipelines.
 *
 * Metrics are on in both (they cannot be turned off; their own cost was measured against a build
 * without them: docs/benchmarks.md#observability). Target: on ≥ 0.9 × off for 1a and 2.
 *
 *   npm run build && node bench/dist/observability.js [--seconds 5] [--rounds 3] [--bursts 4] [--sample-percent 100] [--profile-dir DIR]
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
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
    /** Bursts of load on each of the two gateways per round (figure 1a). */
    bursts: { type: 'string', default: '4' },
    connections: { type: 'string', default: '50' },
    /** The services' SVC_OTEL_TRACES_SAMPLE_PERCENT with tracing on (default: theirs, 10). */
    'sample-percent': { type: 'string' },
    /** Write each service's CPU profile of each round under this directory (`<off|on>-<round>/`). */
    'profile-dir': { type: 'string' },
  },
});
const SAMPLE = args['sample-percent'];
const SECONDS = Number(args.seconds);
const ROUNDS = Number(args.rounds);
const BURSTS = Number(args.bursts);
const BATCH = 100;
const WRITERS = 10;

const TEXT = 'The tests pass now. I changed the parser to keep the raw line when a field is missing. ';
const event = (uid: string): IncomingEvent => ({ type: 'assistant', uid, ts: new Date().toISOString(), data: { text: TEXT, message_id: 'msg_bench' } });

/** 1. Single-event durable POSTs per second, through the gateway at `gatewayUrl` (default: the first). */
async function requestsPerSecond(pipeline: Pipeline, gatewayUrl = pipeline.gatewayUrl, seconds = SECONDS): Promise<number> {
  const worker = await pipeline.createWorker();
  const target = `${gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`;
  const options = {
    connections: args.connections,
    method: 'POST' as const,
    body: JSON.stringify(event('bench:[<id>]')),
    pin: false,
    headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
  };
  await runLoad(target, { ...options, seconds: '2' }); // warm-up
  await pipeline.drained();
  const result = await runLoad(target, { ...options, seconds: String(seconds) });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} answers were not 2xx, ${result.errors} failed`);
  await pipeline.drained();
  return result.requests.average;
}

/** A process's CPU time so far (user + system), in ms, from /proc. */
async function cpuMs(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

interface Burst {
  traced: number;
  untraced: number;
  /** The gateways' CPU per request, ms. */
  tracedCpu: number;
  untracedCpu: number;
}

/**
 * 1a. The traced gateway and the untraced one under the same load at the same time (half the
 * connections each, every burst), so every moment of the machine's drift falls on both; which
 * of the two is the pipeline's first gateway changes by round (`tracedFirst`).
 */
async function gatewaysSideBySide(pipeline: Pipeline, tracedFirst: boolean): Promise<Burst[]> {
  const gateways = pipeline.processes.filter((p) => p.service === 'gateway');
  const [traced, untraced] = tracedFirst ? [0, 1] : [1, 0];
  const bursts: Burst[] = [];
  for (let burst = 0; burst <= BURSTS; burst++) {
    const seconds = burst === 0 ? 2 : Math.max(2, SECONDS / 2); // the first is a warm-up
    const cpuBefore = await Promise.all(gateways.map((g) => cpuMs(g.pid)));
    const results = await Promise.all(
      pipeline.gatewayUrls.map(async (url) => {
        const worker = await pipeline.createWorker();
        return runLoad(`${url}/v1/workers/${worker.worker_id}/sdk-events`, {
          connections: String(Math.max(1, Math.round(Number(args.connections) / 2))),
          method: 'POST',
          body: JSON.stringify(event('bench:[<id>]')),
          pin: false,
          seconds: String(seconds),
          headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
        });
      }),
    );
    const cpuAfter = await Promise.all(gateways.map((g) => cpuMs(g.pid)));
    await pipeline.drained();
    for (const result of results) if (result.non2xx > 0 || result.errors > 0) throw new Error(`${result.non2xx} answers were not 2xx, ${result.errors} failed`);
    const perRequest = (n: number) => (cpuAfter[n]! - cpuBefore[n]!) / (results[n]!.requests.average * seconds);
    if (burst > 0)
      bursts.push({
        traced: results[traced]!.requests.average,
        untraced: results[untraced]!.requests.average,
        tracedCpu: perRequest(traced),
        untracedCpu: perRequest(untraced),
      });
  }
  return bursts;
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

const NO_TRACING = { SVC_OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_ENDPOINT: '' };
const spread = (values: number[], digits: number) => `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;

async function main() {
  const receiver = await startOtlpReceiver({ keepSpans: false });
  const tracingOn = { SVC_OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, ...(SAMPLE ? { SVC_OTEL_TRACES_SAMPLE_PERCENT: SAMPLE } : {}) };
  const figures = {
    sideBySide: [] as Burst[],
    off: { rps: [] as number[], eps: [] as number[] },
    on: { rps: [] as number[], eps: [] as number[] },
  };
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Alternating, and in the other order every other round: the machine's drift falls on both.
      const order: Array<'off' | 'on'> = round % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
      for (const mode of order) {
        const pipeline = await startPipeline({
          logLevel: 'warn',
          profileDir: args['profile-dir'] && path.join(args['profile-dir'], `${mode}-${round + 1}`),
          env: mode === 'on' ? tracingOn : {},
          // Two gateways in each (so both shapes match): with tracing on, one of them untraced (figure 1a),
          // first in even rounds, second in odd ones.
          gatewayEnv: mode === 'on' && round % 2 === 1 ? NO_TRACING : {},
          moreGateways: [mode === 'on' && round % 2 === 0 ? NO_TRACING : {}],
        });
        try {
          if (mode === 'on') figures.sideBySide.push(...(await gatewaysSideBySide(pipeline, round % 2 === 0)));
          figures[mode].rps.push(await requestsPerSecond(pipeline));
          figures[mode].eps.push(await storedPerSecond(pipeline));
        } finally {
          await pipeline.stop();
        }
        process.stdout.write(
          `round ${round + 1}, tracing ${mode}: ${Math.round(figures[mode].rps.at(-1)!)} req/s, ${Math.round(figures[mode].eps.at(-1)!)} events/s stored` +
            (mode === 'on'
              ? `; side by side, traced / untraced gateway: ${figures.sideBySide
                  .slice(-BURSTS)
                  .map((b) => `${Math.round(b.traced)}/${Math.round(b.untraced)}`)
                  .join(' ')} req/s`
              : '') +
            '\n',
        );
      }
    }
  } finally {
    await receiver.close();
  }
  const { requests, bytes } = receiver.exports();
  if (requests === 0 && SAMPLE !== '0') throw new Error('tracing on sent no spans to the receiver: the figures would compare nothing');
  print(
    `observability: tracing off vs on (sampling ${SAMPLE ?? 'the default, 10'} %, spans exported to an OTLP/HTTP stand-in: ${requests} exports, ${(bytes / 2 ** 20).toFixed(1)} MiB), ${SECONDS}s per figure, median of ${ROUNDS} rounds (1a: of ${ROUNDS * BURSTS} bursts of ${Math.max(2, SECONDS / 2)}s on both gateways at once)`,
  );
  const row = (figure: string, off: number[], on: number[], digits = 0) => ({
    figure,
    'tracing off': median(off).toFixed(digits),
    'tracing on': median(on).toFixed(digits),
    'on / off': (median(on) / median(off)).toFixed(2),
    'spread off': spread(off, digits),
    'spread on': spread(on, digits),
  });
  const side = figures.sideBySide;
  const burstRatio = median(side.map((b) => b.traced / b.untraced));
  console.table([
    {
      ...row(
        '1a. single-event POST req/s, two gateways at once',
        side.map((b) => b.untraced),
        side.map((b) => b.traced),
      ),
      'on / off': burstRatio.toFixed(2),
    },
    row(
      '1a. the gateway’s CPU per request, ms',
      side.map((b) => b.untracedCpu),
      side.map((b) => b.tracedCpu),
      3,
    ),
    row('1b. single-event POST req/s, whole pipelines', figures.off.rps, figures.on.rps),
    row('2. batched POSTs, stored events/s', figures.off.eps, figures.on.eps),
  ]);
  verdict('gateway req/s, traced / untraced gateway (1a, the median of the bursts’ ratios)', burstRatio, '≥', 0.9);
  verdict('stored events/s, tracing on / off', median(figures.on.eps) / median(figures.off.eps), '≥', 0.9);
}

await main();
