import { dieWithParent } from '@svc/service-kit';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export type ServiceName = 'gateway' | 'event-ingest' | 'session' | 'control';

// libs/test-support/{src,dist}/ → the workspace root.
const WORKSPACE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The built entry point a container runs for a service (`services/<name>/dist/main.js`). */
function mainOf(service: ServiceName): string {
  return path.join(WORKSPACE, 'services', service, 'dist', 'main.js');
}

export interface ServiceProcess {
  readonly service: ServiceName;
  readonly pid: number;
  /** Everything the process wrote, for a failing test's message. */
  output(): string;
  /** Whether it is still running (a fault must not have ended it). */
  running(): boolean;
  /** SIGTERM, as Kubernetes stops a pod; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL: a crash, no clean-up of any kind. */
  kill(): Promise<void>;
}

export interface ServiceProcessOptions {
  /** Send standard output (the logs) to /dev/null, as a benchmark wants; a crash (stderr) is still kept. */
  discardStdout?: boolean;
  /** Extra arguments for node, e.g. `--cpu-prof` to profile a service under load. */
  nodeArgs?: string[];
}

/** Starts one service from its built `main.js` as its own process, configured only by `SVC_*` variables. */
export function startServiceProcess(service: ServiceName, env: Record<string, string>, options: ServiceProcessOptions = {}): ServiceProcess {
  // It ends with the test's process even when that is killed.
  const launch = dieWithParent(process.execPath, [...(options.nodeArgs ?? []), mainOf(service)]);
  const child: ChildProcess = spawn(launch.command, launch.args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', options.discardStdout ? 'ignore' : 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-64 * 1024));
  child.stdout?.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    service,
    pid: child.pid!,
    output: () => output,
    running,
    async stop() {
      if (running()) child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      if (running()) child.kill('SIGKILL');
      await exited;
    },
  };
}
