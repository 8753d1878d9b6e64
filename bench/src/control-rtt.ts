/**
 * bench/control-rtt: a person's decision (`POST /v1/workers/{id}/control`) until the sidecar's
 * long poll (`GET …/control/pending?wait_ms=30000`) receives it, one decision at a time, p50 and
 * p99 over `--decisions` of them, on the stack as deployed (every service its own process,
 * Postgres with fsync on). Baseline in the same run, same client: a bare Fastify server where
 * a POST hands its body to a waiting long-poll GET (the two HTTP hops and nothing else). Both
 * first make `--warmup` decisions that are not counted (the processes' code is compiled to
 * machine code as it runs; a long-running service is measured warm), then `--rounds` rounds of
 * `--decisions`; the verdict takes the median round (this machine's neighbours make single
 * rounds swing widely: docs/benchmarks.md#how-to-read-these).
 *
 *   npm run build && node bench/dist/control-rtt.js [--decisions 1000] [--rounds 3] [--warmup 500] [--profile DIR]
 */
import http from 'node:http';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import type { ListResponseOf, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { agent, call, percentile, post, print, startPipeline, verdict } from './pipeline.js';

const { values: args } = parseArgs({
  options: {
    decisions: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '500' },
    'log-level': { type: 'string', default: 'info' },
    profile: { type: 'string' },
  },
});
const DECISIONS = Number(args.decisions);
const ROUNDS = Number(args.rounds);
const WARMUP = Number(args.warmup);
/** Every decision made, the uncounted warm-up ones first. */
const MADE = WARMUP + ROUNDS * DECISIONS;

/** One round's round trips in ms, sorted: until the poller has the decision, and until the POST was answered. */
interface Round {
  times: number[];
  answered: number[];
}

/** The long poll runs on its own connection, as the sidecar's does. */
const pollAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/**
 * Sends each decision and waits until the poller has it; returns the round trips in ms. `poll`
 * is called in a loop with the last cursor and returns the request ids it received.
 */
async function measure(decide: (index: number) => Promise<void>, poll: (cursor: string) => Promise<{ ids: string[]; cursor: string }>): Promise<Round[]> {
  const received = new Map<string, () => void>();
  const seen = new Set<string>();
  let running = true;
  const poller = (async () => {
    let cursor = '0';
    while (running) {
      const page = await poll(cursor);
      cursor = page.cursor;
      for (const id of page.ids) {
        seen.add(id);
        received.get(id)?.();
      }
    }
  })();
  const rounds: Round[] = Array.from({ length: ROUNDS }, () => ({ times: [], answered: [] }));
  for (let index = 0; index < MADE; index++) {
    const requestId = `req-${index}`;
    const arrived = new Promise<void>((resolve) => received.set(requestId, resolve));
    const started = performance.now();
    await decide(index);
    const answeredAfter = performance.now() - started;
    if (!seen.has(requestId)) await arrived;
    if (index < WARMUP) continue;
    const round = rounds[Math.floor((index - WARMUP) / DECISIONS)]!;
    round.answered.push(answeredAfter);
    round.times.push(performance.now() - started);
  }
  running = false;
  await decide(-1).catch(() => undefined); // wakes the last poll
  await poller.catch(() => undefined);
  return rounds.map((round) => ({ times: round.times.sort((a, b) => a - b), answered: round.answered.sort((a, b) => a - b) }));
}

/** The round whose p50 is the median of the rounds'. */
function medianRound(rounds: Round[]): Round {
  return [...rounds].sort((a, b) => percentile(a.times, 50) - percentile(b.times, 50))[Math.floor(rounds.length / 2)]!;
}

async function bare(): Promise<Round[]> {
  const app = Fastify();
  const decisions: Array<{ id: number; request_id: string }> = [];
  let waiting: (() => void) | undefined;
  app.post<{ Body: { request_id: string } }>('/decide', async (request, reply) => {
    decisions.push({ id: decisions.length + 1, request_id: request.body.request_id });
    waiting?.();
    return reply.code(201).send(decisions.at(-1));
  });
  app.get<{ Querystring: { after_id: string } }>('/pending', async (request) => {
    const after = Number(request.query.after_id);
    if (decisions.length <= after) await new Promise<void>((resolve) => (waiting = resolve));
    return { items: decisions.slice(after), total: decisions.length };
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  const rounds = await measure(
    async (index) => void (await call(`${url}/decide`, { method: 'POST', token: 'x', body: { request_id: `req-${index}` } })),
    async (cursor) => {
      const page = (await call(`${url}/pending?after_id=${cursor}`, { token: 'x', agent: pollAgent })).body as {
        items: Array<{ id: number; request_id: string }>;
      };
      return { ids: page.items.map((d) => d.request_id), cursor: String(page.items.at(-1)?.id ?? cursor) };
    },
  );
  await app.close();
  return rounds;
}

async function main() {
  const baseline = await bare();
  const pipeline = await startPipeline({ logLevel: args['log-level'], profileDir: args.profile });
  try {
    const worker = await pipeline.createWorker();
    // Every request is stored first, as the sidecar would have reported it.
    for (let at = 0; at < MADE; at += 100) {
      const events = Array.from({ length: Math.min(100, MADE - at) }, (_, i) => ({
        type: 'control_request',
        uid: `cr-${at + i}`,
        ts: new Date().toISOString(),
        data: { request_id: `req-${at + i}`, tool_name: 'Bash', input: { command: 'npm test' } },
      }));
      await post(pipeline, worker, { events });
    }
    const base = `${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}`;
    await waitFor(
      'every request open',
      async () => ((await call(`${base}/control/requests?state=open`, { token: pipeline.userToken })).body as { total: number }).total === MADE,
      60_000,
      100,
    );

    const rounds = await measure(
      async (index) => {
        if (index < 0) return;
        const answer = await call(`${base}/control`, { method: 'POST', token: pipeline.userToken, body: { request_id: `req-${index}`, decision: 'allow' } });
        if (answer.status !== 201) throw new Error(`POST control answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      },
      async (cursor) => {
        const answer = await call(`${base}/control/pending?after_id=${cursor}&wait_ms=${cursor === 'done' ? 0 : 2000}&limit=1000`, {
          token: worker.token,
          agent: pollAgent,
        });
        const page = answer.body as ListResponseOf<StoredEvent<'control_response'>>;
        return { ids: page.items.map((d) => d.data.request_id), cursor: page.items.at(-1)?.id ?? cursor };
      },
    );
    const row = (name: string, sorted: number[]) => ({
      path: name,
      decisions: sorted.length,
      'p50 ms': percentile(sorted, 50).toFixed(2),
      'p99 ms': percentile(sorted, 99).toFixed(2),
      'max ms': sorted.at(-1)!.toFixed(1),
    });
    print(
      `control-rtt: POST /control → the long-polling sidecar has it; ${ROUNDS} rounds of ${DECISIONS} decisions one at a time, after ${WARMUP} uncounted (services log level ${args['log-level']})`,
    );
    console.table(
      rounds.map((round, index) => ({
        round: index + 1,
        'bare p50 ms': percentile(baseline[index]!.times, 50).toFixed(2),
        'svc p50 ms': percentile(round.times, 50).toFixed(2),
        'svc p99 ms': percentile(round.times, 99).toFixed(2),
      })),
    );
    const median = medianRound(rounds);
    print('the median round:');
    console.table([
      row('bare Fastify: POST hands to a waiting GET', medianRound(baseline).times),
      row('svc: POST /control → GET /control/pending', median.times),
      row('svc: POST /control answered (for comparison)', median.answered),
    ]);
    verdict('p50 ms', percentile(median.times, 50), '≤', 5);
    verdict('p99 ms', percentile(median.times, 99), '≤', 25);
  } finally {
    agent.destroy();
    pollAgent.destroy();
    await pipeline.stop();
  }
}

await main();
