import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { createInterface, type Interface } from 'node:readline';
// Only this module of the kit: the sidecar's single executable stays small.
import { dieWithParent } from '@svc/service-kit/child-processes';

/** How the agent's run ended: its code, or 128 + the signal's number; 127 when it never started. */
export interface AgentExit {
  exitCode: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Why it never started (the command does not exist, say). */
  startError?: string;
}

export interface AgentProcess {
  pid: number | undefined;
  /** Writes to its stdin while it is open (a closed stdin is nothing more to tell it). */
  write(bytes: string): void;
  closeStdin(): void;
  /** Calls `onLine` for each line of stdout and stderr; returns the two readers (to pause while the outbox is full). */
  readLines(onLine: (line: string, stream: 'stdout' | 'stderr') => void): Interface[];
  exited: Promise<AgentExit>;
  /** SIGTERM to its process group, then SIGKILL after `graceMs`. */
  terminate(graceMs: number): void;
  /** A signal to its process group (SIGINT: a person's interrupt), if it still runs. */
  signal(signal: NodeJS.Signals): void;
}

/** The agent never outlives its sidecar unobserved: a group left by a previous run is killed first. */
export function killLeftoverAgent(pgidFile: string, warn: (message: string) => void): void {
  let pgid: number;
  try {
    pgid = Number(readFileSync(pgidFile, 'utf8').trim());
  } catch {
    return;
  }
  if (!Number.isInteger(pgid) || pgid <= 1) return;
  try {
    process.kill(-pgid, 'SIGKILL');
    warn(`killed the agent group ${pgid} left by a previous sidecar`);
  } catch {
    // Already gone.
  }
}

/**
 * Starts the agent in its own process group (a signal reaches everything it started), dying with
 * the sidecar however the sidecar dies (a SIGKILL runs no handler), its group id in `pgidFile`
 * while it runs so that a sidecar started again can kill a group left behind.
 */
export function startAgentProcess(options: {
  command: string;
  args: readonly string[];
  cwd?: string | undefined;
  env: NodeJS.ProcessEnv;
  pgidFile: string;
}): AgentProcess {
  const launch = dieWithParent(options.command, [...options.args]);
  const agent = spawn(launch.command, launch.args, { cwd: options.cwd, env: options.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  if (agent.pid) writeFileSync(options.pgidFile, String(agent.pid));
  agent.stdin?.on('error', () => {}); // the agent closed its stdin: nothing more to tell it
  let killTimer: NodeJS.Timeout | undefined;

  const exited = new Promise<AgentExit>((resolve) => {
    let finished = false;
    const finish = (exit: AgentExit) => {
      if (finished) return;
      finished = true;
      clearTimeout(killTimer);
      rmSync(options.pgidFile, { force: true });
      resolve(exit);
    };
    agent.on('error', (err) => {
      // It never ran: there will be no exit status.
      if (agent.pid === undefined) finish({ exitCode: 127, code: 127, signal: null, startError: err.message });
    });
    agent.on('close', (code, signal) => finish({ exitCode: code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1), code, signal }));
  });

  return {
    pid: agent.pid,
    write(bytes) {
      if (bytes && agent.stdin?.writable) agent.stdin.write(bytes);
    },
    closeStdin: () => void agent.stdin?.end(),
    readLines(onLine) {
      return (
        [
          ['stdout', agent.stdout!],
          ['stderr', agent.stderr!],
        ] as const
      ).map(([stream, source]) => {
        const lines = createInterface({ input: source, crlfDelay: Infinity });
        lines.on('line', (line) => onLine(line, stream));
        return lines;
      });
    },
    exited,
    signal(signal) {
      if (!agent.pid) return;
      try {
        process.kill(-agent.pid, signal);
      } catch {
        // Gone meanwhile.
      }
    },
    terminate(graceMs) {
      if (!agent.pid) return;
      try {
        process.kill(-agent.pid, 'SIGTERM');
      } catch {
        return;
      }
      killTimer = setTimeout(() => {
        try {
          process.kill(-agent.pid!, 'SIGKILL');
        } catch {
          // Gone meanwhile.
        }
      }, graceMs);
    },
  };
}
