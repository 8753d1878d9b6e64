import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { dieWithParent } from '@svc/service-kit';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { chown, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stopChild } from '@svc/nats-server';
import { waitForStderr } from './child-output.js';

const POSTGRES_INSTALL_HINT = 'install it with: apt-get install postgresql (Debian), or set SVC_POSTGRES_BIN_DIR to the directory holding initdb and postgres';

export interface PostgresProcess {
  /** A connection string for the superuser `postgres` on database `postgres`. */
  url: string;
  port: number;
  /**
   * Stops the server, keeping its data: a store outage. `immediate` is Postgres's immediate
   * shutdown (SIGQUIT: every connection cut at once, recovery at the next start), as a crash or a
   * failover looks to clients; the default lets clients finish first.
   */
  suspend(mode?: 'smart' | 'immediate'): Promise<void>;
  /** Starts a suspended server again on the same port with the same data. */
  resume(): Promise<void>;
  /** Stops the server (fast shutdown) and deletes its data directory. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  /** Off by default for tests (speed); benchmarks turn it on to measure real commits. */
  durable?: boolean;
}

/** Finds initdb and postgres: `SVC_POSTGRES_BIN_DIR`, Debian's newest `/usr/lib/postgresql/<v>/bin`, then PATH. */
export function findPostgresBinDir(env: Record<string, string | undefined> = process.env, debianRoot = '/usr/lib/postgresql'): string {
  const candidates: string[] = [];
  if (env['SVC_POSTGRES_BIN_DIR']) candidates.push(env['SVC_POSTGRES_BIN_DIR']);
  if (existsSync(debianRoot)) {
    const versions = readdirSync(debianRoot)
      .filter((v) => /^\d+$/.test(v))
      .sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => path.join(debianRoot, v, 'bin')));
  }
  candidates.push(...(env['PATH'] ?? '').split(path.delimiter).filter(Boolean));
  const found = candidates.find((dir) => existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres')));
  if (!found) throw new Error(`PostgreSQL (initdb and postgres) was not found; ${POSTGRES_INSTALL_HINT}`);
  return found;
}

/** Postgres (and PgBouncer) refuse to run as root: as root we run them as the `postgres` user. */
export function runAsIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = lookup('-u');
  const gid = lookup('-g');
  if (!Number.isInteger(uid) || uid <= 0) throw new Error(`running as root needs a "postgres" user to run PostgreSQL as; ${POSTGRES_INSTALL_HINT}`);
  return { uid, gid };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

function run(command: string, args: string[], ids: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...ids });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${path.basename(command)} failed (exit ${code}): ${output.trim()}`))));
  });
}

/** What `initdb` made, once per machine and PostgreSQL: copying it is a fifth of running `initdb` again. */
let clusterTemplate: Promise<string> | undefined;

/**
 * A fresh cluster's data directory, made by `initdb` once and kept beside the test runs'
 * (`$TMPDIR/svc-pg-template-<hash>`, never started); made again when PostgreSQL changes. Test
 * processes running at once may each make one: the first one renamed into place is kept.
 */
function templateCluster(binDir: string, ids: { uid: number; gid: number } | undefined): Promise<string> {
  return (clusterTemplate ??= (async () => {
    const initdb = path.join(binDir, 'initdb');
    const version = createHash('sha256')
      .update(`${initdb} ${statSync(initdb).mtimeMs} ${ids?.uid ?? process.getuid?.()}`)
      .digest('hex')
      .slice(0, 16);
    const template = path.join(tmpdir(), `svc-pg-template-${version}`);
    const complete = (dir: string) => path.join(dir, 'made');
    if (existsSync(complete(template))) return path.join(template, 'data');
    const building = await mkdtemp(path.join(tmpdir(), 'svc-pg-template-making-'));
    try {
      if (ids) await chown(building, ids.uid, ids.gid);
      await run(initdb, ['-D', path.join(building, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], ids);
      await writeFile(complete(building), '');
      await rename(building, template).catch((err: unknown) => {
        // Another test process put its own in place first: theirs serves.
        if (!existsSync(complete(template))) throw err;
      });
    } finally {
      await rm(building, { recursive: true, force: true });
    }
    return path.join(template, 'data');
  })().catch((err: unknown) => {
    clusterTemplate = undefined;
    throw err;
  }));
}

/**
 * A throwaway PostgreSQL server for one test file: a fresh cluster (a copy of one `initdb` made)
 * in a temporary directory, started on a random port, listening on 127.0.0.1 only, trust
 * authentication.
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresProcess> {
  const binDir = findPostgresBinDir();
  const ids = runAsIds();
  const root = await mkdtemp(path.join(tmpdir(), 'svc-pg-'));
  const dataDir = path.join(root, 'data');
  if (ids) await chown(root, ids.uid, ids.gid);
  await run('cp', ['-a', await templateCluster(binDir, ids), dataDir], ids);

  const launch = async (port: number): Promise<ChildProcess> => {
    const settings = ['-c', `port=${port}`, '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${root}`, '-c', 'max_connections=200'];
    if (!options.durable) settings.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
    // It ends with the test's process even when that is killed (a timed-out worker, say).
    const launch = dieWithParent(path.join(binDir, 'postgres'), ['-D', dataDir, ...settings]);
    const child = spawn(launch.command, launch.args, { stdio: ['ignore', 'ignore', 'pipe'], ...ids });
    try {
      await waitForStderr(child, 'database system is ready to accept connections', 'postgres', 30_000);
      return child;
    } catch (err) {
      await stopChild(child);
      throw err;
    }
  };

  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    let child: ChildProcess;
    try {
      child = await launch(port);
    } catch (err) {
      // Another process took the port between our check and postgres' bind: try another.
      if (attempt < 3 && /could not (bind|create listen socket)/i.test(String(err))) continue;
      await rm(root, { recursive: true, force: true });
      throw err;
    }
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port,
      async suspend(mode = 'smart') {
        if (mode === 'immediate') await killPostgres(child, 'SIGQUIT');
        else await stopPostgres(child);
      },
      async resume() {
        child = await launch(port);
      },
      async stop() {
        await stopPostgres(child);
        await rm(root, { recursive: true, force: true });
      },
    };
  }
}

/** Sends the server a signal and waits for it to exit. */
async function killPostgres(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  await exited;
}

/**
 * SIGTERM is PostgreSQL's smart shutdown: clients still saying goodbye finish cleanly (a pool's
 * `end()` resolves before its connections are closed). Then fast shutdown, then SIGKILL.
 */
async function stopPostgres(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const fast = setTimeout(() => child.kill('SIGINT'), 3_000);
  const kill = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(fast);
  clearTimeout(kill);
}
