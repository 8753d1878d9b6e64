import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readPushedPack } from './pushed-pack.js';

describe("a push's pack, read for what it brings", () => {
  let dir: string;
  const git = (args: string[], input?: string) =>
    execFileSync('git', args, {
      cwd: dir,
      input,
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_DIR: path.join(dir, 'src.git') },
    }).trim();
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-pushed-pack-'));
    git(['init', '--quiet', '--bare', path.join(dir, 'src.git')]);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /** A pack of `objects` (and the commit) written as a push's body holds it, from offset 0. */
  async function packOf(objects: string[]): Promise<string> {
    const body = path.join(dir, 'body');
    await writeFile(
      body,
      execFileSync('git', ['pack-objects', '--stdout'], {
        cwd: dir,
        input: `${objects.join('\n')}\n`,
        env: { ...process.env, GIT_DIR: path.join(dir, 'src.git') },
      }),
    );
    return body;
  }

  it('trees that point at each other many times over (64 × 8 levels: 64⁸ paths) are walked once each: the listing ends at once, cut short', async () => {
    const trees = [git(['mktree'], '')];
    for (let level = 1; level <= 8; level++) {
      const entries = Array.from({ length: 64 }, (_, i) => `040000 tree ${trees.at(-1)}\td${String(i).padStart(2, '0')}`).join('\n');
      trees.push(git(['mktree'], `${entries}\n`));
    }
    const commit = git(['-c', 'user.name=a', '-c', 'user.email=a@b', 'commit-tree', trees.at(-1)!, '-m', 'nested']);
    const body = await packOf([commit, ...trees]);
    const started = Date.now();
    const changes = (await readPushedPack(await mkdtemp(path.join(dir, 'inspect-')), body, 0)).changesTo(commit);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(changes.commits).toEqual([{ sha: commit, subject: 'nested', author: 'a <a@b>' }]);
    expect(changes.paths).toEqual([]);
  });

  it('a commit with a new file: its path listed, the subject and author read', async () => {
    const blob = git(['hash-object', '-w', '--stdin'], 'hello\n');
    const tree = git(['mktree'], `100644 blob ${blob}\tREADME.md\n`);
    const commit = git(['-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', 'commit-tree', tree, '-m', 'add the README']);
    const changes = (await readPushedPack(await mkdtemp(path.join(dir, 'inspect-')), await packOf([commit, tree, blob]), 0)).changesTo(commit);
    expect(changes).toMatchObject({ paths: ['README.md'], truncated: false, alreadyOnRemote: false });
    expect(changes.commits[0]).toMatchObject({ subject: 'add the README', author: 'Agent <agent@example.com>' });
  });
});
