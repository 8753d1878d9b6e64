/**
 * bench/sidecar: three figures of the sidecar (the single executable, `sidecar/executable/svc-sidecar`).
 *
 *  1. claude-code lines parsed per second (the adapter over every line of the real transcripts,
 *     in a loop), beside `JSON.parse` of the same lines (the floor) in the same run;
 *  2. the sidecar's RSS while the agent writes 1,000 lines/s for `--seconds` (generic adapter,
 *     delivering through the real gateway), beside an idle `node` process's RSS;
 *  3. decision → agent stdin: `POST /v1/workers/{id}/control` until a stand-in CLI
 *     (`standInAgent('ask-repeatedly')`, speaking the CLI's stream-json) has the decision on its
 *     stdin, through the sidecar's long poll; p50/p99 over `--decisions`.
 *
 *   npm run build && npx nx run @svc/sidecar:executable && node bench/dist/sidecar.js [--seconds 10] [--decisions 200]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ListResponseOf, StoredEvent } from '@svc/protocol';
import { claudeCodeAdapter } from '@svc/sidecar';
import { waitFor } from '@svc/test-support';
import { standInAgent } from '@svc/test-support/stand-ins';
import { agent, call, percentile, print, rssMiB, sleep, startPipeline, verdict, type Pipeline } from './pipeline.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, decisions: { type: 'string', default: '200' } } });
const SECONDS = Number(args.seconds);
const DECISIONS = Number(args.decisions);
const HERE = path.dirname(fileURLToPath(import.meta.url));
const WORKSPACE = path.resolve(HERE, '../..');
/** The single executable, as shipped (`npx nx run @svc/sidecar:executable`). */
const SIDECAR = path.join(WORKSPACE, 'sidecar/executable/svc-sidecar');
const FIXTURES = path.join(WORKSPACE, 'sidecar/test/fixtures/claude-code');

function linesPerSecond(lines: string[], work: (line: string) => unknown): number {
  const deadline = performance.now() + 3000;
  const started = performance.now();
  let count = 0;
  while (performance.now() < deadline) {
    for (const line of lines) work(line);
    count += lines.length;
  }
  return count / ((performance.now() - started) / 1000);
}

/** 1. Adapter parse throughput. */
function parsing() {
  const lines = readdirSync(FIXTURES)
    .filter((name) => name.endsWith('.stdout.jsonl'))
    .flatMap((name) =>
      readFileSync(path.join(FIXTURES, name), 'utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    );
  linesPerSecond(lines, (line) => claudeCodeAdapter.parseLine(line, 'stdout')); // warm-up
  const floor = linesPerSecond(lines, (line) => JSON.parse(line));
  const adapter = linesPerSecond(lines, (line) => claudeCodeAdapter.parseLine(line, 'stdout'));
  print(
    `1. claude-code lines parsed per second (${lines.length} real transcript lines, average ${Math.round(lines.reduce((n, l) => n + l.length, 0) / lines.length)} bytes)`,
  );
  console.table([
    { what: 'JSON.parse alone (floor)', 'lines/s': Math.round(floor) },
    { what: 'claudeCodeAdapter.parseLine', 'lines/s': Math.round(adapter) },
  ]);
  verdict('lines/s', adapter, '≥', 200_000);
}

async function startSidecar(dir: string, name: string, config: Record<string, unknown>): Promise<ChildProcess> {
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify({ state_dir: path.join(dir, `${name}-state`), ...config }));
  return spawn(SIDECAR, [], { env: { ...process.env, SVC_SIDECAR_CONFIG: file }, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** 2. RSS while the agent writes 1,000 lines/s. */
async function memory(pipeline: Pipeline, dir: string) {
  const worker = await pipeline.createWorker();
  const lines = SECONDS * 1000;
  const script = `let n = 0; const t = setInterval(() => { for (let i = 0; i < 10; i++) console.log('build step ' + (++n) + ': compiling src/module-' + n + '.ts'); if (n >= ${lines}) { clearInterval(t); } }, 10);`;
  const idle = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  await sleep(500);
  const idleRss = await rssMiB(idle.pid!);
  idle.kill();
  const sidecar = await startSidecar(dir, 'memory', {
    adapter: 'generic',
    worker_id: worker.worker_id,
    control_plane_url: pipeline.gatewayUrl,
    auth_token: worker.token,
    agent: { command: process.execPath, args: ['-e', script] },
  });
  let peak = 0;
  const exited = new Promise<number | null>((resolve) => sidecar.once('exit', resolve));
  let running = true;
  void exited.then(() => (running = false));
  while (running) {
    peak = Math.max(peak, await rssMiB(sidecar.pid!).catch(() => 0));
    await sleep(100);
  }
  const stored = await waitFor(
    'every line stored',
    async () => {
      const page = (await call(`${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events?limit=1`, { token: pipeline.userToken }))
        .body as ListResponseOf<StoredEvent>;
      return page.total >= lines + 2 ? page.total : undefined;
    },
    60_000,
    200,
  );
  print(`2. sidecar RSS while the agent writes 1,000 lines/s for ${SECONDS} s (generic adapter, through the real gateway)`);
  console.table([
    { process: 'idle node (floor)', 'RSS MiB': idleRss.toFixed(1) },
    { process: 'svc-sidecar, peak', 'RSS MiB': peak.toFixed(1), 'events stored': stored },
  ]);
  verdict('sidecar RSS MiB', peak, '≤', 80);
}

/** 3. Decision → the agent's stdin, through the long poll. */
async function decisionLatency(pipeline: Pipeline, dir: string) {
  const worker = await pipeline.createWorker();
  const receipts = path.join(dir, 'receipts');
  await writeFile(receipts, '');
  const sidecar = await startSidecar(dir, 'decisions', {
    adapter: 'claude-code',
    worker_id: worker.worker_id,
    control_plane_url: pipeline.gatewayUrl,
    auth_token: worker.token,
    decision_wait_ms: 25_000,
    agent: { command: standInAgent('ask-repeatedly'), prompt: 'go', env: { ASKS: String(DECISIONS), RECEIPTS: receipts } },
  });
  const exited = new Promise<number | null>((resolve) => sidecar.once('exit', resolve));
  const base = `${pipeline.gatewayUrl}/v1/workers/${worker.worker_id}`;
  const latencies: number[] = [];
  for (let index = 0; index < DECISIONS; index++) {
    const [request] = await waitFor(
      'the next open request',
      async () => {
        const open = ((await call(`${base}/control/requests?state=open`, { token: pipeline.userToken })).body as ListResponseOf<StoredEvent<'control_request'>>)
          .items;
        return open.length > 0 ? open : undefined;
      },
      30_000,
      1,
    );
    const requestId = request!.data.request_id;
    const sent = performance.timeOrigin + performance.now();
    const answer = await call(`${base}/control`, { method: 'POST', token: pipeline.userToken, body: { request_id: requestId, decision: 'allow' } });
    if (answer.status !== 201) throw new Error(`POST control answered ${answer.status}`);
    const received = await waitFor(
      'the agent got it',
      async () => {
        const line = (await readFile(receipts, 'utf8')).split('\n').find((l) => l.startsWith(`${requestId} `));
        return line ? Number(line.split(' ')[1]) : undefined;
      },
      30_000,
      1,
    );
    latencies.push(received - sent);
  }
  await exited;
  const sorted = latencies.sort((a, b) => a - b);
  print(`3. decision → agent stdin: POST /control until the stand-in CLI has it, ${DECISIONS} decisions one at a time`);
  console.table([
    { decisions: sorted.length, 'p50 ms': percentile(sorted, 50).toFixed(2), 'p99 ms': percentile(sorted, 99).toFixed(2), 'max ms': sorted.at(-1)!.toFixed(1) },
  ]);
  verdict('p50 ms', percentile(sorted, 50), '≤', 10);
}

async function main() {
  parsing();
  const pipeline = await startPipeline({ logLevel: 'info' });
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-bench-sidecar-'));
  try {
    await memory(pipeline, dir);
    await decisionLatency(pipeline, dir);
  } finally {
    agent.destroy();
    await pipeline.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
