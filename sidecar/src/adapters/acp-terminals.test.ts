import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAcpTerminals, terminalCommand } from './acp-terminals.js';

describe("the ACP client's terminals (terminal/create, output, wait_for_exit, kill, release)", () => {
  const root = mkdtempSync(path.join(tmpdir(), 'svc-acp-terminals-'));
  const asked: string[] = [];
  let answer = true;
  const terminals = createAcpTerminals({
    root: () => root,
    env: () => ({ PATH: process.env['PATH'], FROM_AGENT: 'yes' }),
    allowed: (command) => command === 'echo allowed',
    ask: (command) => {
      asked.push(command);
      return Promise.resolve(answer);
    },
  });
  afterAll(() => {
    terminals.closeAll();
    rmSync(root, { recursive: true, force: true });
  });

  it('reads a command as rules do: its shell wrapper taken off', () => {
    expect(terminalCommand({ command: 'bash', args: ['-c', 'npm test'] })).toBe('npm test');
    expect(terminalCommand({ command: 'npm', args: ['test'] })).toBe('npm test');
  });

  it('runs an allowed command unasked in the workspace with the agent’s environment (and its own), its output and exit status kept', async () => {
    const { terminalId } = await terminals.create({ sessionId: 's', command: 'echo', args: ['allowed'] });
    expect(await terminals.waitForExit({ terminalId })).toEqual({ exitCode: 0, signal: null });
    expect(terminals.output({ terminalId })).toEqual({ output: 'allowed\n', truncated: false, exitStatus: { exitCode: 0, signal: null } });
    expect(asked).toEqual([]);
    const env = await terminals.create({
      sessionId: 's',
      command: 'sh',
      args: ['-c', 'echo $FROM_AGENT $EXTRA; pwd'],
      env: [
        { name: 'EXTRA', value: 'too' },
        { name: 'PATH', value: '/nowhere' },
      ],
    });
    await terminals.waitForExit(env);
    expect(terminals.output(env).output).toBe(`yes too\n${root}\n`);
    expect(asked).toEqual(['echo $FROM_AGENT $EXTRA; pwd']);
    terminals.release(env);
    expect(() => terminals.output(env)).toThrow('Resource not found');
  });

  it('keeps the newest output within the limit, said truncated', async () => {
    const { terminalId } = await terminals.create({ sessionId: 's', command: 'sh', args: ['-c', 'printf 0123456789'], outputByteLimit: 4 });
    await terminals.waitForExit({ terminalId });
    expect(terminals.output({ terminalId })).toMatchObject({ output: '6789', truncated: true });
  });

  it('kills a running command; refuses a cwd outside the workspace and a refused command, running nothing', async () => {
    const { terminalId } = await terminals.create({ sessionId: 's', command: 'sleep', args: ['30'] });
    terminals.kill({ terminalId });
    expect(await terminals.waitForExit({ terminalId })).toEqual({ exitCode: null, signal: 'SIGKILL' });
    await expect(terminals.create({ sessionId: 's', command: 'true', cwd: path.dirname(root) })).rejects.toThrow('is not a directory inside the workspace');
    await expect(terminals.create({ sessionId: 's', command: 'true', cwd: 'relative' })).rejects.toThrow('is not an absolute path');
    answer = false;
    await expect(terminals.create({ sessionId: 's', command: 'touch', args: [path.join(root, 'no')] })).rejects.toThrow('was refused');
  });
});
