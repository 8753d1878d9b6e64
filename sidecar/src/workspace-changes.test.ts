import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { boundedPatch, readChanges } from './workspace-changes.js';

describe("the workspace's changes, as the sidecar reads them", () => {
  let dir: string;
  let base: string;
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', dir, '-c', 'user.name=T', '-c', 'user.email=t@example.com', ...args], {
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1' },
    });

  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-changes-test-'));
    git('init', '--quiet', '--initial-branch=main');
    await writeFile(path.join(dir, 'kept.txt'), 'one\ntwo\nthree\n');
    await writeFile(path.join(dir, 'gone.txt'), 'bye\n');
    await writeFile(path.join(dir, 'moved.txt'), 'a file that moves, long enough to be found again\n'.repeat(5));
    await writeFile(path.join(dir, '.gitignore'), 'ignored/\n');
    git('add', '-A');
    git('commit', '--quiet', '-m', 'base');
    base = git('rev-parse', 'HEAD').trim();
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('committed and uncommitted changes against the base — untracked files in, ignored out — with status and line counts; the index untouched', async () => {
    await writeFile(path.join(dir, 'kept.txt'), 'one\n2\nthree\nfour\n');
    git('commit', '--quiet', '-am', 'the agent edits');
    git('rm', '--quiet', 'gone.txt');
    git('mv', 'moved.txt', 'renamed.txt');
    await writeFile(path.join(dir, 'new.txt'), 'fresh\n');
    await writeFile(path.join(dir, 'image.bin'), Buffer.from([0, 1, 2, 3, 0, 255]));
    execFileSync('mkdir', ['-p', path.join(dir, 'ignored')]);
    await writeFile(path.join(dir, 'ignored', 'cache.txt'), 'no\n');
    const indexBefore = await readFile(path.join(dir, '.git', 'index'));
    const report = await readChanges({ repo: 'https://git.example.com/app.git', branch: 'svc/x', base_commit: base, path: dir });
    expect(report.head_commit).toBe(git('rev-parse', 'HEAD').trim());
    expect(report.files).toEqual([
      { path: 'gone.txt', status: 'deleted', additions: 0, deletions: 1 },
      { path: 'image.bin', status: 'added', additions: 0, deletions: 0, binary: true },
      { path: 'kept.txt', status: 'modified', additions: 2, deletions: 1 },
      { path: 'new.txt', status: 'added', additions: 1, deletions: 0 },
      { path: 'renamed.txt', old_path: 'moved.txt', status: 'renamed', additions: 0, deletions: 0 },
    ]);
    expect(report.patch).toContain('diff --git a/kept.txt b/kept.txt');
    expect(report.patch).not.toContain('ignored/cache.txt');
    expect(report).toMatchObject({ truncated: false, patch_bytes: Buffer.byteLength(report.patch) });
    // The agent's own staging is as it left it.
    expect(await readFile(path.join(dir, '.git', 'index'))).toEqual(indexBefore);
  });

  it('a patch past the bound is cut at the start of a file, and says its whole size', () => {
    const section = (name: string, size: number) => `diff --git a/${name} b/${name}\n+${'x'.repeat(size)}\n`;
    const patch = section('a.txt', 100) + section('b.txt', 100) + section('c.txt', 100);
    expect(boundedPatch(patch, 10_000)).toBe(patch);
    expect(boundedPatch(patch, 300)).toBe(section('a.txt', 100) + section('b.txt', 100));
    expect(boundedPatch(patch, 50)).toBe('');
  });
});
