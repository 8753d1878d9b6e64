/**
 * bench/control-rtt-paired: bench/control-rtt's decision round trip (`POST /v1/workers/{id}/control`
 * until the long-polling sidecar has it) on two builds at once, decision by decision: both stacks
 * run side by side, and each decision goes to one and then the same decision to the other (which
 * goes first alternates), so the machine's neighbours weigh on both alike. Whole runs of one
 * build and then the other swing by more than the difference this is for ("no worse than the
 * build before": docs/benchmarks.md#control-rtt). Each build is a checkout with `npm ci` and
 * `npx nx run-many -t build` done; its own `bench/dist/pipeline.js` starts its own stack.
 *
 *   node bench/dist/control-rtt-paired.js --before DIR --after DIR [--decisions 3000] [--warmup 500] [--gap-ms 0]
 */
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { ListResponseOf, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { percentile, print } from './pipeline.js';
import type * as PipelineModule from './pipeline.js';

const { values: args } = parseArgs({
  options: {
    before: { type: 'string' },
    after: { type: 'string' },
    decisions: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '500' },
    'gap-ms': { type: 'string', default: '0' },
  },
});
if (!args.before || !args.after) throw new Error('name both builds: --before DIR --after DIR (checkouts, built)');
const DECISIONS = Number(args.decisions);
const WARMUP = Number(args.warmup);
const MADE = WARMUP + DECISIONS;
/** A pause after each decision, so what a stack does after one (its audit record, say) is done before the other's. */
const GAP_MS = Number(args['gap-ms']);

/** One build's stack, with a worker whose requests are stored and whose long poll runs. */
interface Side {
  name: string;
  /** Round trips of the counted decisions, ms. */
  times: number[];
  decide(index: number): Promise<void>;
  /** Resolves when the long poll has the decision on request `req-<index>`. */
  arrival(index: number): Promise<void>;
  stop(): Promise<void>;
}

async function startSide(name: string, checkout: string): Promise<Side> {
  const kit = (await import(path.resolve(checkout, 'bench/dist/pipeline.js'))) as typeof PipelineModule;
  const pipeline = await kit.startPipeline({ logLevel: 'warn' });
  const worker = await pipeline.createWorker();
  for (let at = 0; at < MADE; at += 100) {
    const events = Array.from({ length: Math.min(100, MADE - at) }, (_, i) => ({
      type: 'control_request',
      uid: `cr-${at + i}`,
      ts: new Date().toISOString(),
      data: { request_id: `req-${at + i}`, tool_name: 'Bash', input: { command: 'npm test' } },
    }));
    await kit.post(pipeline, worker, { events });
  }
  const base = `${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}`;
  await waitFor(
    `every request open on ${name}`,
    async () => ((await kit.call(`${base}/control/requests?state=open&limit=1`, { token: pipeline.userToken })).body as { total: number }).total === MADE,
    60_000,
    100,
  );
  // The long poll runs on its own connection, as the sidecar's does.
  const pollAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const seen = new Set<string>();
  const waiting = new Map<string, () => void>();
  let running = true;
  const poller = (async () => {
    for (let cursor = '0'; running;) {
      const answer = await kit.call(`${base}/control/pending?after_id=${cursor}&wait_ms=2000&limit=1000`, { token: worker.token, agent: pollAgent });
      const page = answer.body as ListResponseOf<StoredEvent<'control_response'>>;
      for (const decision of page.items) {
        seen.add(decision.data.request_id);
        waiting.get(decision.data.request_id)?.();
      }
      cursor = page.items.at(-1)?.id ?? cursor;
    }
  })();
  return {
    name,
    times: [],
    async decide(index) {
      const answer = await kit.call(`${base}/control`, { method: 'POST', token: pipeline.userToken, body: { request_id: `req-${index}`, decision: 'allow' } });
      if (answer.status !== 201) throw new Error(`${name}: POST control answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    },
    arrival: (index) => (seen.has(`req-${index}`) ? Promise.resolve() : new Promise((resolve) => waiting.set(`req-${index}`, resolve))),
    async stop() {
      running = false;
      await poller.catch(() => undefined);
      pollAgent.destroy();
      kit.agent.destroy();
      await pipeline.stop();
    },
  };
}

/** One decision on `side`, until both its POST is answered and its long poll has it; ms. */
async function roundTrip(side: Side, index: number): Promise<number> {
  const arrived = side.arrival(index);
  const started = performance.now();
  await side.decide(index);
  await arrived;
  return performance.now() - started;
}

async function main() {
  const before = await startSide('before', args.before!);
  const after = await startSide('after', args.after!);
  try {
    for (let index = 0; index < MADE; index++) {
      const order = index % 2 === 0 ? [before, after] : [after, before];
      for (const side of order) {
        const ms = await roundTrip(side, index);
        if (index >= WARMUP) side.times.push(ms);
        if (GAP_MS > 0) await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      }
    }
    print(`control-rtt-paired: ${DECISIONS} decisions on each build, alternating one by one${GAP_MS ? `, ${GAP_MS} ms apart` : ''}, after ${WARMUP} uncounted`);
    const rows = [before, after].map((side) => {
      const sorted = [...side.times].sort((a, b) => a - b);
      return {
        build: `${side.name} (${args[side.name as 'before' | 'after']})`,
        'p50 ms': percentile(sorted, 50).toFixed(2),
        'p90 ms': percentile(sorted, 90).toFixed(2),
        'p99 ms': percentile(sorted, 99).toFixed(2),
      };
    });
    console.table(rows);
    // Each decision's after-minus-before: the difference under the same moment's noise.
    const differences = after.times.map((ms, i) => ms - before.times[i]!).sort((a, b) => a - b);
    print(`after − before, decision by decision: median ${percentile(differences, 50).toFixed(3)} ms`);
  } finally {
    await Promise.all([before.stop(), after.stop()]);
  }
}

await main();
