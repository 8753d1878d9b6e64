/**
 * bench/attach-replay: `svc attach --read-only` (the built binary, in a real terminal: tmux)
 * over a worker with 100,000 stored events, on the stack as deployed. Two figures:
 *  1. time to first screen: from starting `svc` until the terminal shows events;
 *  2. the `svc` process's peak RSS (VmHWM) once the whole replay has arrived.
 * Baseline in the same run: a bare `ws` client in its own node process that reads the same
 * stream (time to its first event frame, and its peak RSS once it has all of them).
 *
 *   npm run build && node bench/dist/attach-replay.js [--events 100000]
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { waitFor } from '@svc/test-support';
import { workerWithHistory } from './history.js';
import { print, rssMiB, startPipeline, verdict } from './pipeline.js';

const { values: args } = parseArgs({ options: { events: { type: 'string', default: '100000' }, 'log-level': { type: 'string', default: 'warn' } } });
const EVENTS = Number(args.events);
const SVC = fileURLToPath(new URL('../../cli/dist/svc.mjs', import.meta.url));
const run = promisify(execFile);

const pipeline = await startPipeline({ logLevel: args['log-level'] });
const socket = `svc-bench-${process.pid}`;
const tmux = (...tmuxArgs: string[]) => run('tmux', ['-L', socket, ...tmuxArgs], { encoding: 'utf8' });
try {
  const worker = await workerWithHistory(pipeline, EVENTS);

  // Baseline: a bare WebSocket client of the same stream, in its own process.
  const baselineScript = path.join(pipeline.stateDir, 'baseline.mjs');
  await writeFile(
    baselineScript,
    `import { readFileSync } from 'node:fs';
import WebSocket from ${JSON.stringify(fileURLToPath(import.meta.resolve('ws')))};
const started = Number(process.argv[2]);
const socket = new WebSocket(process.env.URL, { headers: { authorization: 'Bearer ' + process.env.TOKEN } });
let first;
let count = 0;
socket.on('message', (data) => {
  const frame = JSON.parse(String(data));
  if (frame.kind === 'event') {
    count++;
    first ??= Date.now() - started;
    return;
  }
  const peak = Number(/VmHWM:\\s+(\\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))[1]) / 1024;
  console.log(JSON.stringify({ first, all: Date.now() - started, count, rss: peak }));
  socket.close();
});
`,
  );
  const baselineStart = Date.now();
  const baseline = JSON.parse(
    (
      await run(process.execPath, [baselineScript, String(baselineStart)], {
        env: {
          ...process.env,
          URL: `${pipeline.gatewayUrl.replace('http', 'ws')}/v1/workers/${worker.worker_id}/sdk-events/stream?after_id=0`,
          TOKEN: pipeline.userToken,
        },
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      })
    ).stdout,
  ) as { first: number; all: number; count: number; rss: number };

  // svc attach in a real terminal.
  const attachStart = Date.now();
  await tmux(
    '-f',
    '/dev/null',
    'new-session',
    '-d',
    '-s',
    'bench',
    '-x',
    '120',
    '-y',
    '40',
    '-e',
    `SVC_URL=${pipeline.gatewayUrl}`,
    '-e',
    `SVC_TOKEN=${pipeline.userToken}`,
    '-e',
    'SVC_CONFIG=/nonexistent/config.json',
    process.execPath,
    SVC,
    'attach',
    worker.worker_id,
    '--read-only',
  );
  const pid = Number((await tmux('display-message', '-p', '-t', 'bench', '#{pane_pid}')).stdout.trim());
  await waitFor('the first screen', async () => /Step \d+:|checkpoint \d+|\[Bash\]/.test((await tmux('capture-pane', '-p', '-t', 'bench')).stdout), 30_000, 10);
  const firstScreen = Date.now() - attachStart;
  await waitFor(
    'the whole replay',
    async () => (await tmux('capture-pane', '-p', '-t', 'bench')).stdout.includes(`live · ${EVENTS.toLocaleString('en-US')} events`),
    300_000,
    50,
  );
  const allShown = Date.now() - attachStart;
  const rss = await rssMiB(pid, 'VmHWM');
  await tmux('send-keys', '-t', 'bench', 'q');

  print(`attach-replay: svc attach --read-only over ${EVENTS.toLocaleString('en-US')} stored events (tmux, 120×40)`);
  process.stdout.write(`  svc:      first screen ${firstScreen} ms; every event in ${(allShown / 1000).toFixed(1)} s; peak RSS ${rss.toFixed(1)} MiB\n`);
  process.stdout.write(
    `  baseline: bare ws client: first event frame ${baseline.first} ms; every event in ${(baseline.all / 1000).toFixed(1)} s (${baseline.count}); peak RSS ${baseline.rss.toFixed(1)} MiB\n`,
  );
  verdict('time to first screen (ms)', firstScreen, '≤', 1000);
  verdict('peak RSS (MiB)', rss, '≤', 200);
} finally {
  await tmux('kill-server').catch(() => {});
  await pipeline.stop();
}
