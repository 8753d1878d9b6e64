import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const HOOK = fileURLToPath(new URL('../commit-msg', import.meta.url));

interface HookRun {
  exitCode: number;
  stderr: string;
}

describe('commit-msg hook — refuses a subject over 72 characters', () => {
  let dir: string;
  let messages = 0;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-commit-msg-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** Runs the hook as Git does: the executable itself, given the path of the message file. */
  async function runHook(message: string): Promise<HookRun> {
    const file = path.join(dir, `message-${++messages}`);
    await writeFile(file, message);
    return runHookOn(file);
  }

  async function runHookOn(file: string): Promise<HookRun> {
    try {
      const { stderr } = await promisify(execFile)(HOOK, [file]);
      return { exitCode: 0, stderr };
    } catch (error) {
      const failed = error as { code: number; stderr: string };
      return { exitCode: failed.code, stderr: failed.stderr };
    }
  }

  it('accepts a subject of exactly 72 characters, silently, whatever the body', async () => {
    const subject = `gateway: ${'x'.repeat(72 - 'gateway: '.length)}`;
    expect(subject).toHaveLength(72);
    const run = await runHook(`${subject}\n\n${'A body line may be as long as it needs to be. '.repeat(5)}\n`);
    expect(run).toEqual({ exitCode: 0, stderr: '' });
  });

  it('refuses a subject of 73 characters and says why', async () => {
    const subject = `gateway: ${'x'.repeat(73 - 'gateway: '.length)}`;
    const run = await runHook(`${subject}\n\nThe body.\n`);
    expect(run.exitCode).toBe(1);
    expect(run.stderr).toContain('the subject is 73 characters, over 72');
    expect(run.stderr).toContain(subject);
  });

  it('counts characters, not bytes: a subject with em dashes is measured as read', async () => {
    const subject = `docs: ${'—'.repeat(72 - 'docs: '.length)}`;
    expect(Buffer.byteLength(subject)).toBeGreaterThan(72);
    expect(await runHook(`${subject}\n`)).toEqual({ exitCode: 0, stderr: '' });
    expect((await runHook(`${subject}—\n`)).exitCode).toBe(1);
  });

  it("the subject is the first line that is not blank or a comment, as in Git's editor template", async () => {
    const long = `# ${'a comment Git removes after the hook, however long it is '.repeat(3)}`;
    const accepted = await runHook(`${long}\n\nsession: a short subject\n\n# Please enter the commit message for your changes.\n`);
    expect(accepted).toEqual({ exitCode: 0, stderr: '' });
    const refused = await runHook(`${long}\n\nsession: ${'y'.repeat(80)}\n`);
    expect(refused.exitCode).toBe(1);
  });

  it('a fixup! or squash! prefix does not count: autosquash removes it with the commit', async () => {
    const subject = `sidecar: ${'z'.repeat(72 - 'sidecar: '.length)}`;
    expect(await runHook(`fixup! ${subject}\n`)).toEqual({ exitCode: 0, stderr: '' });
    expect(await runHook(`squash! fixup! ${subject}\n`)).toEqual({ exitCode: 0, stderr: '' });
    expect((await runHook(`fixup! ${subject}z\n`)).exitCode).toBe(1);
  });

  it('a message file it cannot read refuses the commit', async () => {
    const run = await runHookOn(path.join(dir, 'no-such-message'));
    expect(run.exitCode).not.toBe(0);
    expect(run.stderr).toContain('ENOENT');
  });
});
