import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import path from 'node:path';

const autocannonBin = path.join(path.dirname(createRequire(import.meta.url).resolve('autocannon/package.json')), 'autocannon.js');

/** With `taskset` and two CPUs, the servers get CPU 0 and the client CPU 1, so they do not take turns. */
export const PINNED = spawnSync('taskset', ['-c', '0', 'true']).status === 0 && availableParallelism() >= 2;

/** Pins this process (and what it starts afterwards) to CPU 0 when pinning is possible. */
export function pinServersToCpu0(): void {
  if (PINNED) spawnSync('taskset', ['-pc', '0', String(process.pid)]);
}

export interface LoadResult {
  requests: { average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}

export interface LoadOptions {
  seconds: string;
  connections: string;
  headers?: Record<string, string>;
  method?: 'GET' | 'POST';
  /** A body; `[<id>]` in it becomes a fresh id per request. */
  body?: string;
  /** Run the client on CPU 1 (default: when pinning is possible). */
  pin?: boolean;
}

/** Runs autocannon in its own process (on CPU 1 when pinned), so the client does not share the server's event loop. */
export function runLoad(url: string, options: LoadOptions): Promise<LoadResult> {
  const headerArgs = Object.entries(options.headers ?? {}).flatMap(([key, value]) => ['-H', `${key}=${value}`]);
  const bodyArgs = options.body === undefined ? [] : ['-I', '-b', options.body];
  const command = [
    process.execPath,
    autocannonBin,
    '--json',
    '-d',
    options.seconds,
    '-c',
    options.connections,
    '-m',
    options.method ?? 'GET',
    ...headerArgs,
    ...bodyArgs,
    url,
  ];
  const pinned = (options.pin ?? PINNED) ? ['taskset', '-c', '1', ...command] : command;
  return new Promise((resolve, reject) => {
    const child = spawn(pinned[0]!, pinned.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(output) as LoadResult) : reject(new Error(`autocannon exited ${code}`))));
  });
}
