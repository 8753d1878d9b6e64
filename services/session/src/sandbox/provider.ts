/**
 * Where an agent runs. Every provider offers the same few operations, and none of them goes
 * through a shell: a command is an argv array, a file is uploaded as bytes. So nothing a
 * template or a user writes is ever interpreted (`$(…)` and backticks stay text).
 */
/** The PATH of sandboxed programs, unless configured (`SVC_SANDBOX_PATH`). */
export const DEFAULT_SANDBOX_PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin';

export interface SandboxProvider {
  readonly name: 'local' | 'kubernetes';
  /**
   * Whether its sandboxes can be sealed: no network but loopback and one channel to the gateway
   * (bubblewrap's own network namespace; a Pod behind the "gateway only" NetworkPolicy).
   */
  readonly seals: boolean;
  /** Makes a sandbox for a worker. */
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** The sandbox a handle (from `Sandbox.handle`) names, e.g. after a restart; it may be gone. */
  open(handle: SandboxHandle): Sandbox;
  /** The session service is stopping: stop what must not outlive it (local sandboxes), or nothing. */
  close(graceMs: number): Promise<void>;
}

export interface SandboxSpec {
  workerId: string;
  /** The container image (kubernetes); the local provider runs the host's programs. */
  image?: string | undefined;
  /** Seal it (see `SandboxProvider.seals`); a provider that cannot seal ignores it (the spawn refused it before). */
  sealed?: boolean | undefined;
}

/** What a provider needs to find a sandbox again; stored with the session (JSON). */
export type SandboxHandle =
  { provider: 'local'; dir: string; isolation: 'bubblewrap' | 'process'; sealed?: boolean } | { provider: 'kubernetes'; namespace: string; pod: string };

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Sandbox {
  readonly handle: SandboxHandle;
  /**
   * A Unix socket inside the sandbox that leads to the gateway (its path as the sandbox's programs
   * use it), when the sandbox reaches the gateway that way rather than over its network.
   */
  readonly controlPlaneSocket?: string | undefined;
  /**
   * The path a program in the sandbox uses for `sandboxPath`: the same path, except in a local
   * sandbox without bubblewrap, where sandbox paths live under the sandbox's directory.
   */
  resolvePath(sandboxPath: string): string;
  /** Writes `content` at `sandboxPath` (absolute, inside the sandbox), making parent directories. */
  upload(sandboxPath: string, content: Uint8Array | { fromFile: string }, mode?: number): Promise<void>;
  /** Copies a host directory's tree (a clone, `.git` included) into `sandboxPath`, an existing directory of the sandbox. */
  importDirectory(hostDir: string, sandboxPath: string): Promise<void>;
  /**
   * Copies the sandbox's regular file at `sandboxPath` to `hostFile` (any bytes), refusing one
   * over `maxBytes` before anything is copied, and anything that is not a regular file (a link,
   * a FIFO: the sandbox may have put one there).
   */
  exportFile(sandboxPath: string, hostFile: string, maxBytes: number): Promise<void>;
  /** Runs `argv` in the sandbox and waits for it (no shell). */
  exec(argv: readonly string[], options?: { timeoutMs?: number }): Promise<ExecResult>;
  /**
   * Starts `argv` in the background with exactly `env` (nothing of the host's environment
   * leaks in); its output goes to the sandbox's logs.
   */
  startBackground(argv: readonly string[], env: Readonly<Record<string, string>>): Promise<void>;
  /** The last `tail` lines of the sandbox's logs, then (with `follow`) each new line until `signal` aborts or the sandbox ends. */
  logs(options: { tail: number; follow: boolean; signal: AbortSignal }): AsyncIterable<string>;
  /** Stops what runs in the sandbox (SIGTERM, then SIGKILL after `graceMs`) and keeps its files. */
  stop(graceMs: number): Promise<void>;
  /** Stops it and removes everything it had. Harmless when already gone. */
  destroy(graceMs: number): Promise<void>;
}
