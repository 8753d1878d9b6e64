import { spawn, type ChildProcess } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import {
  RequestError,
  type CreateTerminalRequest,
  type CreateTerminalResponse,
  type TerminalExitStatus,
  type TerminalOutputResponse,
  type WaitForTerminalExitResponse,
} from '@agentclientprotocol/sdk';
import { commandOfArgv } from './shell-command.js';

/** The most output a terminal keeps when the agent names no limit, and the most it may name. */
const DEFAULT_OUTPUT_BYTES = 1024 * 1024;
const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** Variables a terminal's request may not set: which programs run (PATH), what they load (LD_*), what a shell reads first (BASH_ENV, ENV). */
const FIXED_ENV = /^(PATH|LD_[A-Z_]+|BASH_ENV|ENV|SHELLOPTS|BASHOPTS|PS4|IFS|NODE_OPTIONS)$/;
/** Terminals one run may hold at once (a released one frees its place). */
const MAX_TERMINALS = 16;

interface Terminal {
  child: ChildProcess;
  chunks: Buffer[];
  bytes: number;
  limit: number;
  truncated: boolean;
  exit: Promise<TerminalExitStatus>;
  exitStatus: TerminalExitStatus | undefined;
}

/** The command a terminal runs, as rules read it (`execute(<command>)`): its argv's shell wrapper taken off. */
export function terminalCommand(params: Pick<CreateTerminalRequest, 'command' | 'args'>): string {
  return commandOfArgv([params.command, ...(params.args ?? [])]);
}

/** Keeps the newest `limit` bytes of a terminal's output, cut at a character's start. */
function keep(terminal: Terminal, chunk: Buffer): void {
  terminal.chunks.push(chunk);
  terminal.bytes += chunk.length;
  if (terminal.bytes <= terminal.limit) return;
  const all = Buffer.concat(terminal.chunks);
  let from = all.length - terminal.limit;
  // A UTF-8 continuation byte (10xxxxxx) is no character's start.
  while (from < all.length && (all[from]! & 0xc0) === 0x80) from++;
  terminal.chunks = [all.subarray(from)];
  terminal.bytes = all.length - from;
  terminal.truncated = true;
}

const signalOf = (child: ChildProcess, signal: NodeJS.Signals) => {
  try {
    // Its own process group: what it started goes too.
    process.kill(-child.pid!, signal);
  } catch {
    // Gone already.
  }
};

/**
 * The client's terminals for an ACP agent (`terminal/create`, `output`, `wait_for_exit`, `kill`,
 * `release`): a command runs in the sandbox, in the workspace, with the agent's environment,
 * once allowed — by a call of this turn the person or the engine allowed for this very command,
 * or else asked like a tool call (`execute` with its command).
 */
export function createAcpTerminals(options: {
  root(): string;
  env(): NodeJS.ProcessEnv;
  /** Whether a call of this turn was allowed for this command (taken: it allows one run). */
  allowed(command: string): boolean;
  ask(command: string, cwd: string): Promise<boolean>;
}) {
  const terminals = new Map<string, Terminal>();
  let next = 0;

  const terminalOf = (terminalId: string): Terminal => {
    const terminal = terminals.get(terminalId);
    if (!terminal) throw RequestError.resourceNotFound(`terminal ${terminalId}`);
    return terminal;
  };

  async function cwdOf(cwd: string | null | undefined): Promise<string> {
    const root = await realpath(options.root());
    if (cwd === undefined || cwd === null) return root;
    if (!path.isAbsolute(cwd)) throw RequestError.invalidParams(undefined, `${JSON.stringify(cwd)} is not an absolute path`);
    const resolved = await realpath(cwd).catch(() => undefined);
    if (resolved === undefined || !(resolved === root || resolved.startsWith(`${root}${path.sep}`)))
      throw RequestError.invalidParams(undefined, `${cwd} is not a directory inside the workspace (${root})`);
    return resolved;
  }

  return {
    async create(params: CreateTerminalRequest): Promise<CreateTerminalResponse> {
      if (terminals.size >= MAX_TERMINALS) throw RequestError.invalidRequest(undefined, `a run holds at most ${MAX_TERMINALS} terminals: release one first`);
      const cwd = await cwdOf(params.cwd);
      const command = terminalCommand(params);
      if (!options.allowed(command) && !(await options.ask(command, cwd)))
        throw new RequestError(-32000, `running ${JSON.stringify(command)} was refused by svc's permission decision`);
      // What decides which program runs, or what it loads, stays the agent's own: a command allowed as `npm test` runs that.
      const named = (params.env ?? []).filter(({ name }) => !FIXED_ENV.test(name));
      const env = { ...options.env(), ...Object.fromEntries(named.map(({ name, value }) => [name, value])) };
      const child = spawn(params.command, params.args ?? [], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      const limit = Math.min(Math.max(0, params.outputByteLimit ?? DEFAULT_OUTPUT_BYTES), MAX_OUTPUT_BYTES);
      const terminal: Terminal = { child, chunks: [], bytes: 0, limit, truncated: false, exitStatus: undefined, exit: Promise.resolve({}) };
      terminal.exit = new Promise((resolve) => {
        child.once('error', (err) => {
          keep(terminal, Buffer.from(`${err.message}\n`));
          resolve((terminal.exitStatus = { exitCode: 127, signal: null }));
        });
        child.once('close', (code, signal) => resolve((terminal.exitStatus ??= { exitCode: code, signal })));
      });
      for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => keep(terminal, chunk));
      const terminalId = `term-${++next}`;
      terminals.set(terminalId, terminal);
      return { terminalId };
    },

    output({ terminalId }: { terminalId: string }): TerminalOutputResponse {
      const terminal = terminalOf(terminalId);
      return {
        output: Buffer.concat(terminal.chunks).toString('utf8'),
        truncated: terminal.truncated,
        ...(terminal.exitStatus ? { exitStatus: terminal.exitStatus } : {}),
      };
    },

    async waitForExit({ terminalId }: { terminalId: string }): Promise<WaitForTerminalExitResponse> {
      return terminalOf(terminalId).exit;
    },

    kill({ terminalId }: { terminalId: string }): Record<string, never> {
      const terminal = terminalOf(terminalId);
      if (!terminal.exitStatus) signalOf(terminal.child, 'SIGKILL');
      return {};
    },

    release({ terminalId }: { terminalId: string }): Record<string, never> {
      const terminal = terminalOf(terminalId);
      if (!terminal.exitStatus) signalOf(terminal.child, 'SIGKILL');
      terminals.delete(terminalId);
      return {};
    },

    /** The agent is gone: every command it started through a terminal goes too. */
    closeAll(): void {
      for (const terminal of terminals.values()) if (!terminal.exitStatus) signalOf(terminal.child, 'SIGKILL');
      terminals.clear();
    },
  };
}
