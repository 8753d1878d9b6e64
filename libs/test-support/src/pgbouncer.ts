import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { stopChild } from '@svc/nats-server';
import { dieWithParent } from '@svc/service-kit';
import { waitForStderr } from './child-output.js';
import { freePort, runAsIds, type PostgresProcess } from './postgres.js';

const PGBOUNCER_INSTALL_HINT = 'install it with: apt-get install pgbouncer (Debian), or set SVC_PGBOUNCER_BIN to its path';

export interface PgBouncerProcess {
  /** A connection string for `postgres` on database `postgres`, through the pooler. */
  url: string;
  /** The pooler's admin console (`SHOW POOLS`, `SHOW STATS`): database `pgbouncer`. */
  adminUrl: string;
  stop(): Promise<void>;
}

export interface PgBouncerOptions {
  /** How server connections are shared: `transaction` (the default) hands one to a client for a transaction only. */
  poolMode?: 'session' | 'transaction';
  /** Server connections per database and user: clients beyond it wait for one. */
  poolSize?: number;
}

/** PgBouncer's binary: `SVC_PGBOUNCER_BIN`, Debian's `/usr/sbin/pgbouncer`, then PATH. */
export function findPgBouncerBinary(env: Record<string, string | undefined> = process.env, debianPaths = ['/usr/sbin/pgbouncer']): string {
  const candidates = [env['SVC_PGBOUNCER_BIN'], ...debianPaths, ...(env['PATH'] ?? '').split(path.delimiter).map((dir) => path.join(dir, 'pgbouncer'))];
  const found = candidates.find((candidate): candidate is string => candidate !== undefined && candidate !== '' && existsSync(candidate));
  if (!found) throw new Error(`PgBouncer was not found; ${PGBOUNCER_INSTALL_HINT}`);
  return found;
}

/**
 * A throwaway PgBouncer in front of a test's Postgres, as a deployment puts one before the
 * database: its own temporary directory, a random port on 127.0.0.1, trust authentication (as
 * the test's Postgres), and by default transaction pooling with few server connections, so
 * anything that leans on a session (a prepared statement by name, a session lock, a `SET`)
 * shows up as a failure.
 */
export async function startPgBouncer(upstream: Pick<PostgresProcess, 'port'>, options: PgBouncerOptions = {}): Promise<PgBouncerProcess> {
  const binary = findPgBouncerBinary();
  const ids = runAsIds();
  const root = await mkdtemp(path.join(tmpdir(), 'svc-pgbouncer-'));
  if (ids) await chown(root, ids.uid, ids.gid);
  const port = await freePort();
  const config = path.join(root, 'pgbouncer.ini');
  await writeFile(path.join(root, 'users.txt'), '"postgres" ""\n');
  await writeFile(
    config,
    [
      '[databases]',
      `postgres = host=127.0.0.1 port=${upstream.port} dbname=postgres user=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(root, 'users.txt')}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 500',
      'admin_users = postgres',
      // Logs go to standard error, which the helper reads to know when it is up.
      'syslog = 0',
      '',
    ].join('\n'),
  );
  // It ends with the test's process even when that is killed.
  const launch = dieWithParent(binary, [config]);
  const child: ChildProcess = spawn(launch.command, launch.args, { stdio: ['ignore', 'ignore', 'pipe'], ...ids });
  try {
    await waitForStderr(child, 'process up', 'pgbouncer', 10_000);
  } catch (err) {
    await stopChild(child);
    await rm(root, { recursive: true, force: true });
    throw err;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    adminUrl: `postgres://postgres@127.0.0.1:${port}/pgbouncer`,
    async stop() {
      await stopChild(child);
      await rm(root, { recursive: true, force: true });
    },
  };
}
