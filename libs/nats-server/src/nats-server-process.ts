import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { dieWithParent } from '@svc/service-kit';

/** The oldest nats-server we support (JetStream features we rely on arrived in 2.10). */
const MIN_NATS_SERVER_VERSION = [2, 10, 0] as const;

const NATS_SERVER_INSTALL_HINT =
  "install it with: go install github.com/nats-io/nats-server/v2@v2.12.15 (Debian's package is 2.9, too old), " + 'or set SVC_NATS_SERVER to its path';

export class NatsServerNotFoundError extends Error {
  override readonly name = 'NatsServerNotFoundError';
}

/** Finds the nats-server binary: `SVC_NATS_SERVER`, then PATH, then Go's bin directory. */
export function findNatsServerBinary(env: Record<string, string | undefined> = process.env): string {
  const configured = env['SVC_NATS_SERVER'];
  if (configured) {
    if (!existsSync(configured))
      throw new NatsServerNotFoundError(`SVC_NATS_SERVER points to ${configured}, which does not exist; ${NATS_SERVER_INSTALL_HINT}`);
    return configured;
  }
  const goBin = env['GOBIN'] ?? path.join(env['GOPATH'] ?? path.join(homedir(), 'go'), 'bin');
  const candidates = [...(env['PATH'] ?? '').split(path.delimiter).filter(Boolean), goBin].map((dir) => path.join(dir, 'nats-server'));
  const found = candidates.find((candidate) => existsSync(candidate));
  if (!found) throw new NatsServerNotFoundError(`nats-server was not found on PATH or in ${goBin}; ${NATS_SERVER_INSTALL_HINT}`);
  assertSupportedVersion(found);
  return found;
}

function assertSupportedVersion(binary: string): void {
  const output = spawnSync(binary, ['--version'], { encoding: 'utf8' }).stdout ?? '';
  const match = /v(\d+)\.(\d+)\.(\d+)/.exec(output);
  if (!match) return;
  const version = match.slice(1, 4).map(Number);
  const [major, minor] = version as [number, number, number];
  const [minMajor, minMinor] = MIN_NATS_SERVER_VERSION;
  if (major < minMajor || (major === minMajor && minor < minMinor)) {
    throw new NatsServerNotFoundError(
      `${binary} is nats-server ${match[0]}; svc needs ${MIN_NATS_SERVER_VERSION.join('.')} or newer: ${NATS_SERVER_INSTALL_HINT}`,
    );
  }
}

/** Who may connect: the users' credentials, and the `authorization` block that admits them (libs/bus makes both). */
interface NatsAuthorization<Credentials> {
  credentials: Credentials;
  /** The nats-server config that holds them (JSON is valid NATS config). */
  config: string;
}

/** The permission violations kept for a test to read (every RPC subject refused to every user that may not call it is a few hundred). */
const MAX_KEPT_VIOLATIONS = 2000;

export interface NatsServerOptions<Credentials> {
  /** Defaults to `findNatsServerBinary()`. */
  binary?: string;
  /** JetStream store directory; a temporary one (removed at stop) when not given. */
  storeDir?: string;
  /** Client port; a random free one when not given. */
  port?: number;
  host?: string;
  /** Who may connect: a client without these credentials is refused. */
  authorization: NatsAuthorization<Credentials>;
  /** A member of a JetStream cluster (test-support's `startNatsCluster`): its name, route port and the routes to the others. */
  cluster?: NatsClusterMembership;
}

interface NatsClusterMembership {
  /** The cluster's name, the same on every member. */
  name: string;
  /** This server's name, unique in the cluster (JetStream's placement and leaders name servers by it). */
  serverName: string;
  /** The port this server listens on for routes from the others. */
  routePort: number;
  /** Every member's route URL (this one's may be among them). */
  routes: string[];
}

export interface NatsServerProcess<Credentials> {
  url: string;
  port: number;
  storeDir: string;
  pid: number;
  /** Who may connect, and each service's user (`connectBus({credentials: server.credentials.gateway})`). */
  credentials: Credentials;
  /** The permission violations the server reported so far (a service publishing or subscribing beyond its subjects), at most 100. */
  permissionViolations(): string[];
  /** Kills the server (SIGKILL), keeping its store: a crash. */
  kill(): Promise<void>;
  /**
   * Starts a killed server again on the same port and credentials; on its store, or with
   * `wipeStore` on an empty one (a machine replaced with its disk: what it alone held is gone).
   */
  restart(options?: { wipeStore?: boolean }): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes a temporary store. */
  stop(): Promise<void>;
}

/**
 * How many threads the nats-server we start runs Go code on (`GOMAXPROCS`): at most half the
 * machine, unless `GOMAXPROCS` says otherwise. It shares the machine with the services and the
 * database, and Go's scheduler keeps idle threads spinning in search of work: on this 2-core
 * machine that took the CPU from the very processes a message was on its way to: decisions were
 * slower and ingest's throughput lower with more threads (docs/benchmarks.md#control-rtt).
 */
export function natsServerThreads(env: Record<string, string | undefined> = process.env): string {
  return env['GOMAXPROCS'] || String(Math.max(1, Math.floor(availableParallelism() / 2)));
}

/** Starts a nats-server with JetStream and resolves once it accepts clients. */
export async function launchNatsServer<Credentials>(options: NatsServerOptions<Credentials>): Promise<NatsServerProcess<Credentials>> {
  const binary = options.binary ?? findNatsServerBinary();
  const temporary = options.storeDir === undefined;
  const storeDir = options.storeDir ?? (await mkdtemp(path.join(tmpdir(), 'svc-nats-')));
  await mkdir(storeDir, { recursive: true });
  const portsDir = await mkdtemp(path.join(tmpdir(), 'svc-nats-ports-'));
  const host = options.host ?? '127.0.0.1';
  const { credentials } = options.authorization;
  // The config holds only who may connect (mode 0600); the command line says everything else.
  const configFile = path.join(portsDir, 'nats.conf');
  await writeFile(configFile, options.authorization.config, { mode: 0o600 });
  let stderr = '';
  const violations: string[] = [];

  /** Runs nats-server on `port` (-1: a free one) and resolves with its URL once it accepts clients. */
  async function run(port: number): Promise<{ child: ChildProcess; url: string }> {
    await Promise.all((await readdir(portsDir)).filter((name) => name.endsWith('.ports')).map((name) => rm(path.join(portsDir, name), { force: true })));
    const args = ['-c', configFile, '-js', '-sd', storeDir, '-a', host, '-p', String(port), '--ports_file_dir', portsDir];
    const { cluster } = options;
    if (cluster) {
      args.push(
        '-n',
        cluster.serverName,
        '--cluster_name',
        cluster.name,
        '--cluster',
        `nats://${host}:${cluster.routePort}`,
        '--routes',
        cluster.routes.join(','),
      );
    }
    // Its own process group: a Ctrl+C in the terminal reaches only us, and we stop the server
    // after draining our connections to it (else it would die first and the drain would fail).
    // It ends with this process even when this process is killed (no exit handler runs then).
    const launch = dieWithParent(binary, args);
    const child = spawn(launch.command, launch.args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: true,
      env: { ...process.env, GOMAXPROCS: natsServerThreads() },
    });
    let partial = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-8192);
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (/(Publish|Subscription) Violation/.test(line) && violations.length < MAX_KEPT_VIOLATIONS) violations.push(line);
    });
    try {
      return { child, url: await waitForPortsFile(child, portsDir, () => stderr) };
    } catch (err) {
      await stopChild(child);
      throw err;
    }
  }

  let child: ChildProcess | undefined;
  const killOnExit = () => child?.kill('SIGKILL');
  process.once('exit', killOnExit);
  const cleanup = async () => {
    process.off('exit', killOnExit);
    if (child) await stopChild(child);
    await rm(portsDir, { recursive: true, force: true });
    if (temporary) await rm(storeDir, { recursive: true, force: true });
  };

  try {
    const started = await run(options.port ?? -1);
    child = started.child;
    const url = started.url;
    const port = Number(new URL(url).port);
    return {
      url,
      port,
      storeDir,
      get pid() {
        return child!.pid!;
      },
      credentials,
      permissionViolations: () => [...violations],
      async kill() {
        const exited = new Promise<void>((resolve) =>
          child!.exitCode !== null || child!.signalCode !== null ? resolve() : child!.once('exit', () => resolve()),
        );
        child!.kill('SIGKILL');
        await exited;
      },
      async restart({ wipeStore = false } = {}) {
        if (wipeStore) {
          await rm(storeDir, { recursive: true, force: true });
          await mkdir(storeDir, { recursive: true });
        }
        child = (await run(port)).child;
      },
      stop: cleanup,
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function waitForPortsFile(child: ChildProcess, portsDir: string, stderr: () => string): Promise<string> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`nats-server exited with code ${child.exitCode}: ${stderr().trim()}`);
    const file = (await readdir(portsDir)).find((name) => name.endsWith('.ports'));
    if (file) {
      const content = await readFile(path.join(portsDir, file), 'utf8').catch(() => '');
      try {
        const ports = JSON.parse(content) as { nats?: string[] };
        if (ports.nats?.[0]) return ports.nats[0];
      } catch {
        // Written but not complete yet: read again.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`nats-server did not start within 15 s: ${stderr().trim()}`);
}

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
