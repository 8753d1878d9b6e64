/**
 * bench/soak: the event pipeline as deployed (pipeline.ts: every service its own process,
 * nats-server, Postgres with fsync on) under a steady load for a long while — by default 10
 * minutes of 500 events/s from 10 posting workers, each also watched by a WebSocket viewer —
 * and what it costs the services over time: every 30 s the RSS and the open file descriptors of
 * each. A leak shows as growth from minute 2 (after warm-up) to the end: the RSS must stay
 * within 15 % of its minute-2 value and the descriptors must not grow.
 *
 *   npm run build && node bench/dist/soak.js [--minutes 10] [--rate 500] [--log-level warn]
 */
import { readdir } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { EXAMPLE_EVENTS, type IncomingEvent } from '@svc/protocol';
import { post, print, rssMiB, sleep, startPipeline, verdict } from './pipeline.js';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '500' },
    'log-level': { type: 'string', default: 'warn' },
  },
});
const MINUTES = Number(args.minutes);
const RATE = Number(args.rate);
const WORKERS = 10;
const TICK_MS = 100;
const SAMPLE_MS = 30_000;
/** The warm-up after which the services' footprint is the baseline. */
const BASELINE_AT_MS = Math.min(120_000, (MINUTES * 60_000) / 5);

const openFds = async (pid: number) => (await readdir(`/proc/${pid}/fd`)).length;

const pipeline = await startPipeline({ logLevel: args['log-level'] });
try {
  const workers = await Promise.all(Array.from({ length: WORKERS }, () => pipeline.createWorker()));
  let received = 0;
  const viewers = workers.map((worker) => {
    const socket = new WebSocket(`${pipeline.gatewayUrl.replace(/^http/, 'ws')}/v1/workers/${worker.worker_id}/sdk-events/stream?after_id=0`, {
      headers: { authorization: `Bearer ${pipeline.userToken}` },
    });
    socket.on('message', () => received++);
    return socket;
  });
  // Each worker posts a batch every tick: RATE events/s over all of them.
  const perBatch = Math.max(1, Math.round((RATE * TICK_MS) / 1000 / WORKERS));
  const examples = Object.values(EXAMPLE_EVENTS);
  let posted = 0;
  let stopping = false;
  const posters = workers.map(async (worker) => {
    for (let n = 0, next = Date.now(); !stopping; next += TICK_MS) {
      const events = Array.from({ length: perBatch }, () => ({ ...examples[n % examples.length]!, uid: `${worker.worker_id}:${n++}` }) as IncomingEvent);
      await post(pipeline, worker, { events });
      posted += events.length;
      await sleep(Math.max(0, next + TICK_MS - Date.now()));
    }
  });

  const samples: Array<{ atS: number; rss: number[]; fds: number[] }> = [];
  const started = Date.now();
  const sample = async () => {
    const atS = Math.round((Date.now() - started) / 1000);
    const rss = await Promise.all(pipeline.processes.map((p) => rssMiB(p.pid)));
    const fds = await Promise.all(pipeline.processes.map((p) => openFds(p.pid)));
    samples.push({ atS, rss, fds });
    process.stdout.write(
      `t=${atS}s posted=${posted} delivered=${received} ${pipeline.processes.map((p, i) => `${p.service}: ${rss[i]!.toFixed(1)} MiB ${fds[i]} fds`).join(' | ')}\n`,
    );
  };
  let baseline: { rss: number[]; fds: number[] } | undefined;
  while (Date.now() - started < MINUTES * 60_000) {
    await sleep(Math.min(SAMPLE_MS, MINUTES * 60_000 - (Date.now() - started)));
    await sample();
    if (!baseline && Date.now() - started >= BASELINE_AT_MS) baseline = samples.at(-1)!;
  }
  stopping = true;
  await Promise.all(posters);
  await pipeline.drained();
  const last = samples.at(-1)!;
  print(`soak: ${MINUTES} min at ${RATE} events/s over ${WORKERS} workers, each with a viewer: ${posted} events posted, ${received} delivered to viewers`);
  for (const [i, p] of pipeline.processes.entries()) {
    const growth = (100 * (last.rss[i]! - baseline!.rss[i]!)) / baseline!.rss[i]!;
    process.stdout.write(
      `${p.service}: RSS ${baseline!.rss[i]!.toFixed(1)} MiB at ${Math.round(BASELINE_AT_MS / 1000)} s → ${last.rss[i]!.toFixed(1)} MiB at the end (${growth >= 0 ? '+' : ''}${growth.toFixed(1)} %); fds ${baseline!.fds[i]} → ${last.fds[i]}\n`,
    );
    verdict(`${p.service} RSS growth %`, growth, '≤', 15);
    verdict(`${p.service} fd growth`, last.fds[i]! - baseline!.fds[i]!, '≤', 0);
  }
  for (const socket of viewers) socket.close();
} finally {
  await pipeline.stop();
}
