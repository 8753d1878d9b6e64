import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { killLeftoverAgent, startAgentProcess } from './agent-process.js';

describe("the agent's process", () => {
  const dirs: string[] = [];
  const dir = () => {
    const made = mkdtempSync(path.join(tmpdir(), 'svc-agent-process-'));
    dirs.push(made);
    return made;
  };
  afterEach(() => dirs.splice(0).forEach((made) => rmSync(made, { recursive: true, force: true })));

  it('reads both streams line by line, takes stdin, records its group while it runs, and reports its exit code', async () => {
    const pgidFile = path.join(dir(), 'agent.pgid');
    const agent = startAgentProcess({
      command: 'sh',
      args: ['-c', 'echo out; echo err >&2; read answer; echo "got $answer"; exit 3'],
      env: process.env,
      pgidFile,
    });
    const lines: string[] = [];
    agent.readLines((line, stream) => lines.push(`${stream}:${line}`));
    expect(existsSync(pgidFile)).toBe(true);
    agent.write('yes\n');
    const exit = await agent.exited;
    expect(exit).toEqual({ exitCode: 3, code: 3, signal: null });
    expect(lines.sort()).toEqual(['stderr:err', 'stdout:got yes', 'stdout:out']);
    expect(existsSync(pgidFile)).toBe(false);
  });

  it('a command that does not exist: exit 127, saying why', async () => {
    const agent = startAgentProcess({ command: '/nonexistent/agent', args: [], env: process.env, pgidFile: path.join(dir(), 'agent.pgid') });
    agent.readLines(() => {});
    const exit = await agent.exited;
    expect(exit.exitCode).toBe(127);
  });

  it('terminate: SIGTERM to its group; one that ignores it is killed after the grace', async () => {
    const polite = startAgentProcess({ command: 'sleep', args: ['60'], env: process.env, pgidFile: path.join(dir(), 'a.pgid') });
    polite.terminate(5000);
    expect(await polite.exited).toEqual({ exitCode: 143, code: null, signal: 'SIGTERM' });

    const stubborn = startAgentProcess({
      command: 'sh',
      args: ['-c', 'trap "" TERM; echo ready; sleep 60 & wait'],
      env: process.env,
      pgidFile: path.join(dir(), 'b.pgid'),
    });
    await new Promise<void>((resolve) => stubborn.readLines((line) => line === 'ready' && resolve()));
    const started = Date.now();
    stubborn.terminate(200);
    expect((await stubborn.exited).exitCode).toBe(137);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('a group left by a previous sidecar is killed before the next agent starts', async () => {
    const leftover = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
    const gone = new Promise((resolve) => leftover.once('exit', (_code, signal) => resolve(signal)));
    const pgidFile = path.join(dir(), 'agent.pgid');
    writeFileSync(pgidFile, String(leftover.pid));
    const warnings: string[] = [];
    killLeftoverAgent(pgidFile, (message) => warnings.push(message));
    expect(await gone).toBe('SIGKILL');
    expect(warnings).toEqual([`killed the agent group ${leftover.pid} left by a previous sidecar`]);
  });
});
