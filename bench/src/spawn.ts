/**
 * bench/spawn: `POST /v1/sessions` (template `demo`) until the worker is `running` (the moment
 * the session service publishes it on `svc.workers.status.<worker>`), with the local provider
 * (bubblewrap), one session at a time, on the stack as deployed (every service its own
 * process, Postgres with fsync on). Each session is deleted before the next.
 *
 * Baseline in the same run: the floor of what a local spawn must do on this machine, done
 * directly: make the sandbox's directories, copy the svc-sidecar binary into it, run one
 * program under bubblewrap and start another in the background.
 *
 *   npm run build && node bench/dist/spawn.js [--sessions 20]
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CHECKOUT_SIDECAR_BINARY } from '@svc/session';
import { subjects, type EventData, type ListResponseOf, type Session, type StoredEvent, type WorkerRecord } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { call, percentile, print, sleep, startPipeline, verdict } from './pipeline.js';

const { values: args } = parseArgs({ options: { sessions: { type: 'string', default: '20' }, 'log-level': { type: 'string', default: 'warn' } } });
const SESSIONS = Number(args.sessions);

const pipeline = await startPipeline({ logLevel: args['log-level'] });
try {
  // When each worker was seen running (a worker may be running before POST's answer arrives).
  const runningAt = new Map<string, number>();
  const statuses = pipeline.nc.subscribe(subjects.workerStatusAll, {
    callback: (_err, msg) => {
      const record = msg.json<WorkerRecord>();
      if (record.status === 'running') runningAt.set(record.worker_id, performance.now());
    },
  });

  const spawnTimes: number[] = [];
  const stepTotals = new Map<string, number[]>();
  for (let round = 0; round < SESSIONS + 2; round++) {
    const started = performance.now();
    const answer = await call(`${pipeline.gatewayUrl}/v1/sessions`, { method: 'POST', token: pipeline.userToken, body: { template: 'demo' } });
    if (answer.status !== 201) throw new Error(`POST /v1/sessions answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    const session = answer.body as Session;
    const workerId = session.worker_id;
    await waitFor(
      `session ${session.id} running`,
      async () => {
        if (runningAt.has(workerId)) return true;
        const current = (await call(`${pipeline.gatewayUrl}/v1/sessions/${session.id}`, { token: pipeline.userToken })).body as Session;
        if (current.status === 'failed') throw new Error(`the session failed: ${JSON.stringify(current.failure)}`);
        return false;
      },
      30_000,
      5,
    );
    const elapsed = runningAt.get(workerId)! - started;
    if (round >= 2) {
      // The first two warm up (file caches, connections).
      spawnTimes.push(elapsed);
      const events = (await call(`${pipeline.gatewayUrl}/v1/workers/${workerId}/sdk-events?types=system&limit=100`, { token: pipeline.userToken }))
        .body as ListResponseOf<StoredEvent>;
      for (const event of events.items) {
        const details = (event.data as EventData<'system'>).details as { step?: string; duration_ms?: number } | undefined;
        if ((event.data as EventData<'system'>).subtype === 'spawn_step' && details?.step && typeof details.duration_ms === 'number') {
          stepTotals.set(details.step, [...(stepTotals.get(details.step) ?? []), details.duration_ms]);
        }
      }
    }
    await call(`${pipeline.gatewayUrl}/v1/sessions/${session.id}`, { method: 'DELETE', token: pipeline.userToken });
    await sleep(50);
  }
  statuses.unsubscribe();

  const floor: number[] = [];
  const scratch = path.join(pipeline.stateDir, 'baseline');
  for (let round = 0; round < SESSIONS + 2; round++) {
    const dir = path.join(scratch, String(round));
    const started = performance.now();
    for (const inside of ['workspace', 'etc/svc', 'var/run/svc', 'usr/local/bin', 'var/lib/svc-sidecar', 'tmp'])
      await mkdir(path.join(dir, inside), { recursive: true });
    await copyFile(CHECKOUT_SIDECAR_BINARY, path.join(dir, 'usr/local/bin/svc-sidecar'));
    const bwrap = [
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--bind',
      path.join(dir, 'workspace'),
      '/workspace',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--unshare-pid',
      '--',
    ];
    spawnSync('bwrap', [...bwrap, 'true']);
    const child = spawn('bwrap', [...bwrap, 'sleep', '5'], { stdio: 'ignore' });
    await new Promise((resolve) => child.once('spawn', resolve));
    if (round >= 2) floor.push(performance.now() - started);
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }

  spawnTimes.sort((a, b) => a - b);
  floor.sort((a, b) => a - b);
  const p50 = percentile(spawnTimes, 50);
  print(`spawn: POST /v1/sessions (demo) → running, local provider (bubblewrap), ${SESSIONS} sessions one at a time`);
  process.stdout.write(`  svc:      p50 ${p50.toFixed(0)} ms, p90 ${percentile(spawnTimes, 90).toFixed(0)} ms, max ${spawnTimes.at(-1)!.toFixed(0)} ms\n`);
  process.stdout.write(
    `  baseline: p50 ${percentile(floor, 50).toFixed(0)} ms (mkdir + copy the 95 MB svc-sidecar + one bwrap run + one bwrap start, done directly)\n`,
  );
  process.stdout.write(`  ratio svc / baseline: ${(p50 / percentile(floor, 50)).toFixed(1)}×\n`);
  process.stdout.write('  median per step (ms, as the session service reports it):\n');
  for (const [step, durations] of stepTotals) {
    durations.sort((a, b) => a - b);
    process.stdout.write(`    ${step.padEnd(24)} ${percentile(durations, 50)}\n`);
  }
  verdict('spawn p50 (ms)', p50, '≤', 1500);
} finally {
  await pipeline.stop();
}
