import { spawn, spawnSync } from 'node:child_process';
import { constants as fsConstants, createWriteStream, existsSync, lstatSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { chmod, copyFile, cp, mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { CodedError } from '@svc/protocol';
import { ConfigError, type Logger } from '@svc/service-kit';
import { DEFAULT_SANDBOX_PATH, type ExecResult, type Sandbox, type SandboxHandle, type SandboxProvider, type SandboxSpec } from './provider.js';

/**
 * The directories a local sandbox has of its own (writable, kept under its directory on the
 * host). Everything else it sees is the host's `/usr`, a few files of `/etc`, and fresh
 * `/proc`, `/dev` and `/tmp`, all read-only but `/tmp`.
 */
const LOCAL_SANDBOX_DIRS = ['/workspace', '/home/agent', '/etc/svc', '/var/run/svc', '/usr/local/bin', '/var/lib/svc-sidecar'] as const;

/** Host files of /etc a program needs (users, name resolution, TLS roots, time zone). */
const HOST_ETC_FILES = [
  '/etc/passwd',
  '/etc/group',
  '/etc/hosts',
  '/etc/resolv.conf',
  '/etc/nsswitch.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/alternatives',
  '/etc/localtime',
];

export type LocalIsolation = 'bubblewrap' | 'process';

export interface LocalProviderOptions {
  /** Each sandbox is a directory under here. */
  dir: string;
  /** `auto`: bubblewrap when installed, else a plain process (with a warning). */
  isolation?: 'auto' | LocalIsolation;
  /** Host directories every sandbox sees read-only at the same path. */
  hostDirs?: readonly string[];
  /** Directories holding the control plane's secrets (the state directory): no sandbox may see them, so a host directory that holds one is refused. */
  secretDirs?: readonly string[];
  /** The gateway as this machine reaches it: each sandbox's channel (`GATEWAY_SOCKET`) leads there. */
  gateway: { host: string; port: number };
  logger: Logger;
}

/** The sandbox's one channel to the control plane: a Unix socket the session service forwards to the gateway. */
const GATEWAY_SOCKET = '/var/run/svc/gateway.sock';

/** The longest path a Unix socket may have (sun_path, with its terminating NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * Listens on `socketPath` and joins each connection to a new TCP connection to the gateway,
 * byte for byte: the sandbox speaks HTTP to the gateway through it, and reaches nothing else.
 */
async function forwardToGateway(socketPath: string, gateway: { host: string; port: number }, log: Logger): Promise<net.Server> {
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
    throw new Error(
      `the sandbox's gateway socket ${socketPath} is longer than a Unix socket path may be (${MAX_SOCKET_PATH} bytes): use a shorter SVC_SANDBOXES_DIR`,
    );
  }
  await rm(socketPath, { force: true });
  const server = net.createServer((inside) => {
    const outside = net.connect({ host: gateway.host, port: gateway.port });
    outside.setNoDelay(true);
    inside.pipe(outside).pipe(inside);
    const end = () => {
      inside.destroy();
      outside.destroy();
    };
    inside.on('error', end).on('close', end);
    outside.on('error', (err) => {
      log.warn({ err, gateway }, 'a sandbox could not reach the gateway');
      end();
    });
    outside.on('close', end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return server;
}

/** The host's directories every bubblewrap sandbox sees read-only (`/usr` first). */
const READ_ONLY_HOST_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/opt'] as const;

/** A sandbox that saw the state directory could read the sign-in code and the keys there: such a setup does not start. */
function refuseSecretsInSight(seen: readonly string[], secretDirs: readonly string[]): void {
  for (const secret of secretDirs.map((dir) => path.resolve(dir)))
    for (const dir of seen)
      if (secret === dir || secret.startsWith(`${dir}${path.sep}`))
        throw new ConfigError([
          `sandboxes would see ${secret} (the state directory, with the sign-in code and keys) through ${dir}: move SVC_STATE_DIR out of it, or drop ${dir} from SVC_SANDBOX_HOST_DIRS`,
        ]);
}

/** Whether `bwrap` runs here (installed, and user namespaces allowed). */
export function bubblewrapAvailable(): boolean {
  const probe = spawnSync('bwrap', ['--ro-bind', '/', '/', '--', 'true'], { stdio: 'ignore', timeout: 5000 });
  return probe.status === 0;
}

/**
 * Sandboxes on this machine. With bubblewrap, the agent sees its own `/workspace`,
 * `/usr/local/bin/svc-sidecar`, `/etc/svc/sidecar.json` and `/var/run/svc/token`, its own pid
 * namespace and, sealed (the default), its own network namespace with loopback only: the one way
 * out is `/var/run/svc/gateway.sock`, which this process forwards to the gateway. Without it, a plain
 * process in a directory of its own: no isolation at all, said loudly, and sandbox paths are
 * mapped under that directory (`resolvePath`). A sandbox lives no longer than this process
 * (`--die-with-parent`), so stopping `svc up` leaves nothing running.
 */
export function createLocalProvider(options: LocalProviderOptions): SandboxProvider & { isolation: LocalIsolation } {
  const log = options.logger.child({ component: 'local-sandbox' });
  const wanted = options.isolation ?? 'auto';
  const isolation: LocalIsolation = wanted === 'auto' ? (bubblewrapAvailable() ? 'bubblewrap' : 'process') : wanted;
  if (isolation === 'process') {
    log.warn(
      'bubblewrap (bwrap) is not available: local sandboxes are plain processes with NO isolation from this machine; install bubblewrap (apt-get install bubblewrap) for real sandboxes',
    );
  }
  const root = path.resolve(options.dir);
  const hostDirs = (options.hostDirs ?? []).map((dir) => path.resolve(dir));
  refuseSecretsInSight([...hostDirs, ...READ_ONLY_HOST_DIRS], options.secretDirs ?? []);
  // Sandboxes made by this process: they end with it (bubblewrap kills them if it dies).
  const made = new Map<string, Sandbox>();
  // Each sandbox's channel to the gateway, by sandbox directory; closed when it is destroyed.
  const channels = new Map<string, net.Server>();
  const closeChannel = (dir: string) => {
    channels.get(dir)?.close();
    channels.delete(dir);
  };
  return {
    name: 'local',
    isolation,
    seals: isolation === 'bubblewrap',
    async close(graceMs) {
      await Promise.all([...made.values()].map((sandbox) => sandbox.stop(graceMs)));
      made.clear();
      for (const dir of [...channels.keys()]) closeChannel(dir);
    },
    async create(spec: SandboxSpec) {
      const dir = path.join(root, spec.workerId);
      for (const inside of LOCAL_SANDBOX_DIRS) await mkdir(path.join(dir, 'root', inside), { recursive: true });
      await mkdir(path.join(dir, 'root', 'tmp'), { recursive: true });
      await writeFile(path.join(dir, 'sandbox.log'), '');
      channels.set(dir, await forwardToGateway(path.join(dir, 'root', GATEWAY_SOCKET), options.gateway, log));
      const handle: LocalHandle = { provider: 'local', dir, isolation, ...(isolation === 'bubblewrap' && spec.sealed !== false ? { sealed: true } : {}) };
      const sandbox = new LocalSandbox(handle, log, hostDirs, () => {
        made.delete(dir);
        closeChannel(dir);
      });
      made.set(dir, sandbox);
      return sandbox;
    },
    open(handle: SandboxHandle) {
      if (handle.provider !== 'local') throw new Error(`the local provider cannot open a ${handle.provider} sandbox`);
      return new LocalSandbox(handle, log, hostDirs, () => {
        made.delete(handle.dir);
        closeChannel(handle.dir);
      });
    },
  };
}

type LocalHandle = Extract<SandboxHandle, { provider: 'local' }>;

/** What `startBackground` leaves in the sandbox's directory: bubblewrap's pid and, inside it, its child's. */
interface SandboxPids {
  launcher: number;
  child?: number;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `file` to its end and collects its output. */
function runToEnd(file: string, args: string[], options: { cwd: string; timeoutMs: number }): Promise<ExecResult> {
  return new Promise<ExecResult>((resolve, reject) => {
    const child = spawn(file, args, { cwd: options.cwd, env: { PATH: DEFAULT_SANDBOX_PATH }, stdio: ['ignore', 'pipe', 'pipe'], timeout: options.timeoutMs });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 128, stdout, stderr }));
  });
}

/**
 * A sandbox on this host: its files under `handle.dir/root`, its program run under bubblewrap
 * (or as a plain process), its output in `sandbox.log`, its pids in `pids.json`, so that a
 * restarted session service can open it again from the handle alone.
 */
class LocalSandbox implements Sandbox {
  readonly controlPlaneSocket: string;
  private readonly rootDir: string;
  private readonly logFile: string;
  private readonly pidFile: string;

  constructor(
    readonly handle: LocalHandle,
    private readonly log: Logger,
    private readonly hostDirs: readonly string[],
    private readonly onDestroyed: () => void,
  ) {
    this.rootDir = path.join(handle.dir, 'root');
    this.logFile = path.join(handle.dir, 'sandbox.log');
    this.pidFile = path.join(handle.dir, 'pids.json');
    this.controlPlaneSocket = this.resolvePath(GATEWAY_SOCKET);
  }

  resolvePath(sandboxPath: string): string {
    return this.handle.isolation === 'bubblewrap' ? sandboxPath : this.hostPath(sandboxPath);
  }

  async upload(sandboxPath: string, content: Uint8Array | { fromFile: string }, mode = 0o644): Promise<void> {
    const target = this.hostPath(sandboxPath);
    await mkdir(path.dirname(target), { recursive: true });
    if (content instanceof Uint8Array) await writeFile(target, content, { mode });
    else await copyFile(content.fromFile, target);
    await chmod(target, mode);
  }

  async importDirectory(hostDir: string, sandboxPath: string): Promise<void> {
    await cp(hostDir, this.hostPath(sandboxPath), { recursive: true, verbatimSymlinks: true });
  }

  async exportFile(sandboxPath: string, hostFile: string, maxBytes: number): Promise<void> {
    // The sandbox may have put a link or a FIFO there: opened without following a link or waiting on a FIFO, so nothing of the host is read.
    const source = await open(this.hostPath(sandboxPath), fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    try {
      const { size } = await source.stat().then((found) => {
        if (!found.isFile()) throw new Error(`${sandboxPath} is not a regular file`);
        return found;
      });
      if (size > maxBytes) throw new CodedError('payload_too_large', `${sandboxPath} is ${size} bytes; at most ${maxBytes} are read out of a sandbox here`);
      // Read up to the size seen: a file the sandbox grows meanwhile is not followed.
      await pipeline(source.createReadStream({ autoClose: false, start: 0, end: Math.max(0, size - 1) }), createWriteStream(hostFile));
    } finally {
      await source.close();
    }
  }

  exec(argv: readonly string[], options: { timeoutMs?: number } = {}): Promise<ExecResult> {
    const { file, args, cwd } = this.command(argv, ['--chdir', '/workspace']);
    return runToEnd(file, args, { cwd, timeoutMs: options.timeoutMs ?? 30_000 });
  }

  async startBackground(argv: readonly string[], env: Readonly<Record<string, string>>): Promise<void> {
    const bubblewrap = this.handle.isolation === 'bubblewrap';
    const output = await open(this.logFile, 'a');
    try {
      const { file, args, cwd } = this.command(argv, bubblewrap ? ['--chdir', '/workspace', '--info-fd', '3'] : []);
      const child = spawn(file, args, { cwd, env: { ...env }, detached: true, stdio: ['ignore', output.fd, output.fd, 'pipe'] });
      await new Promise<void>((resolve, reject) => {
        child.once('spawn', resolve);
        child.once('error', reject);
      });
      child.unref();
      const childPid = bubblewrap ? await readChildPid(child.stdio[3] as NodeJS.ReadableStream) : undefined;
      await writeFile(this.pidFile, JSON.stringify({ launcher: child.pid, ...(childPid ? { child: childPid } : {}) } satisfies Partial<SandboxPids>));
      this.log.info({ dir: this.handle.dir, pid: child.pid, childPid, isolation: this.handle.isolation }, 'sandbox process started');
    } finally {
      await output.close();
    }
  }

  logs(options: { tail: number; follow: boolean; signal: AbortSignal }): AsyncIterable<string> {
    return followLogFile(this.logFile, options, async () => {
      const pids = await this.readPids();
      return pids !== undefined && !isAlive(pids.launcher);
    });
  }

  async stop(graceMs: number): Promise<void> {
    const pids = await this.readPids();
    if (!pids || !isAlive(pids.launcher)) return;
    // SIGTERM goes to the sandboxed program only. bubblewrap would die at once; so would the
    // pid namespace's init (bubblewrap's child), and with it everything in the namespace:
    // no grace for the program to drain.
    signal(pids.child ? await programOf(pids.child) : pids.launcher, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (isAlive(pids.launcher) && Date.now() < deadline) await sleep(50);
    if (isAlive(pids.launcher)) signal(-pids.launcher, 'SIGKILL');
    while (isAlive(pids.launcher)) await sleep(20);
  }

  async destroy(graceMs: number): Promise<void> {
    await this.stop(graceMs);
    await rm(this.handle.dir, { recursive: true, force: true });
    this.onDestroyed();
  }

  /** The host path of a sandbox path; only the sandbox's own directories can be written. */
  private hostPath(sandboxPath: string): string {
    const normalized = path.posix.normalize(sandboxPath);
    if (!path.posix.isAbsolute(sandboxPath) || normalized !== sandboxPath)
      throw new Error(`sandbox path must be absolute and normalized, got ${JSON.stringify(sandboxPath)}`);
    if (!LOCAL_SANDBOX_DIRS.some((own) => normalized === own || normalized.startsWith(`${own}/`)) && !normalized.startsWith('/tmp/')) {
      throw new Error(`${sandboxPath} is not inside one of the sandbox's own directories (${LOCAL_SANDBOX_DIRS.join(', ')}, /tmp)`);
    }
    return path.join(this.rootDir, normalized);
  }

  /** The program and arguments that run `argv` inside the sandbox. */
  private command(argv: readonly string[], extra: string[] = []): { file: string; args: string[]; cwd: string } {
    if (this.handle.isolation === 'process') return { file: argv[0]!, args: argv.slice(1), cwd: this.hostPath('/workspace') };
    const binds = [...LOCAL_SANDBOX_DIRS, '/tmp'].map((inside) => ({ host: path.join(this.rootDir, inside), inside }));
    const readOnly = this.hostDirs.flatMap((host) => ['--ro-bind', host, host]);
    // Sealed: a network namespace of its own, with loopback only; the gateway socket is its way out.
    const network = this.handle.sealed ? ['--unshare-net'] : [];
    return { file: 'bwrap', args: [...bubblewrapArgs(binds), ...network, ...readOnly, ...extra, '--', ...argv], cwd: '/' };
  }

  private async readPids(): Promise<SandboxPids | undefined> {
    try {
      return JSON.parse(await readFile(this.pidFile, 'utf8')) as SandboxPids;
    } catch {
      return undefined;
    }
  }
}

/**
 * The last `tail` lines of a log file, then (with `follow`) each line added to it, until `signal`
 * aborts or the writer has exited (`hasExited`; one not started yet has not) and its last words are read.
 */
async function* followLogFile(
  logFile: string,
  { tail, follow, signal: abort }: { tail: number; follow: boolean; signal: AbortSignal },
  hasExited: () => Promise<boolean>,
): AsyncIterable<string> {
  const text = await readFile(logFile, 'utf8').catch(() => undefined);
  if (text === undefined) return;
  let offset = Buffer.byteLength(text);
  const lines = text.split('\n');
  let pending = lines.pop() ?? '';
  for (const line of lines.slice(Math.max(0, lines.length - tail))) yield line;
  // Once the program is seen to have exited, the file is read once more: what it wrote just
  // before it exited (after the last read) is not lost.
  let exited = false;
  while (follow && !abort.aborted) {
    const size = await stat(logFile)
      .then((s) => s.size)
      .catch(() => undefined);
    if (size === undefined) return;
    if (size > offset) {
      const file = await open(logFile, 'r');
      const chunk = Buffer.alloc(size - offset);
      await file.read(chunk, 0, chunk.length, offset).finally(() => file.close());
      offset = size;
      const parts = (pending + chunk.toString('utf8')).split('\n');
      pending = parts.pop() ?? '';
      for (const line of parts) yield line;
      continue;
    }
    if (exited) {
      if (pending !== '') yield pending;
      return;
    }
    if (await hasExited()) {
      exited = true;
      continue;
    }
    await sleep(100, undefined, { signal: abort }).catch(() => {});
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/**
 * The program under a pid namespace's init: bubblewrap's `child-pid` is that init (pid 1 inside),
 * and the program is its child (pid 2 inside).
 */
export async function programOf(initPid: number): Promise<number> {
  const children = await readFile(`/proc/${initPid}/task/${initPid}/children`, 'utf8').catch(() => '');
  const first = Number(children.trim().split(/\s+/)[0]);
  return Number.isInteger(first) && first > 0 ? first : initPid;
}

/** bubblewrap's `--info-fd` writes `{"child-pid": N}`: the sandboxed program's pid on the host. */
export async function readChildPid(stream: NodeJS.ReadableStream): Promise<number | undefined> {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  try {
    const pid = (JSON.parse(text) as { 'child-pid'?: unknown })['child-pid'];
    return typeof pid === 'number' ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * bubblewrap's arguments for a sandbox: the host's programs read-only, a few files of /etc,
 * `binds` writable (host directory → path inside), fresh /proc and /dev, its own pid, IPC and
 * UTS namespaces, and an end when its parent ends.
 */
export function bubblewrapArgs(binds: ReadonlyArray<{ host: string; inside: string }>): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const top of READ_ONLY_HOST_DIRS.slice(1)) {
    if (!existsSync(top)) continue;
    const stats = lstatSync(top);
    if (stats.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else if (stats.isDirectory()) args.push('--ro-bind', top, top);
  }
  args.push('--dir', '/etc');
  for (const file of HOST_ETC_FILES) if (existsSync(file)) args.push('--ro-bind', file, file);
  for (const { host, inside } of binds) args.push('--bind', host, inside);
  args.push(
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--hostname',
    'svc-sandbox',
    '--die-with-parent',
    '--setenv',
    'HOME',
    '/home/agent',
  );
  return args;
}
