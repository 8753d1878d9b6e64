import { spawn } from 'node:child_process';
import { createReadStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { GIT_PUSH_LISTED_COMMITS, GIT_PUSH_LISTED_PATHS, type GitPushInput } from '@svc/protocol';

/** What a push's pack carries for one ref: the commits new to the remote, and the files they add or change. */
export type PackedChanges = Pick<GitPushInput, 'commits' | 'paths'> & { truncated: boolean; alreadyOnRemote: boolean };

/** The most tree entries one push's listing reads. */
const WALKED_ENTRIES_LIMIT = 200_000;
/** The most of `git cat-file`'s output read into memory (the pack's trees and commits). */
const OBJECT_BYTES_LIMIT = 64 * 1024 * 1024;

/** How long reading one pack may take. */
const GIT_TIMEOUT_MS = 120_000;

/**
 * Reads a pack as the remote would receive it, in a bare repository of its own under `dir`:
 * `git index-pack` (which checks every object is well-formed) on the pack, then the commit and tree objects it
 * holds. Only what is in the pack is known — the proxy asked for a pack without thin deltas —
 * so a commit's parents outside it end the walk, and a file is listed when its content is new.
 * Nothing of the sandbox's repository runs here: its configuration and hooks never reach the gateway.
 */
export async function readPushedPack(dir: string, bodyFile: string, packOffset: number): Promise<PackedPack> {
  const repo = path.join(dir, 'inspect.git');
  await mkdir(repo);
  await git(['init', '--quiet', '--bare', repo], dir);
  await git(['-c', 'pack.threads=1', 'index-pack', '--stdin', '--fsck-objects'], repo, createReadStream(bodyFile, { start: packOffset }));
  const listing = (await git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname) %(objecttype)'], repo)).toString('utf8');
  const types = new Map<string, string>();
  for (const line of listing.split('\n')) {
    const [sha, type] = line.split(' ');
    if (sha && type) types.set(sha, type);
  }
  const wanted = [...types].filter(([, type]) => type === 'commit' || type === 'tree').map(([sha]) => sha);
  const contents = parseBatch(await git(['cat-file', '--batch'], repo, `${wanted.join('\n')}\n`));
  return new PackedPack(types, contents);
}

/** The objects of a pack, read. */
export class PackedPack {
  constructor(
    private readonly types: ReadonlyMap<string, string>,
    private readonly contents: ReadonlyMap<string, Buffer>,
  ) {}

  /** The commits from `head` back to the first whose parent is not in the pack, and the files they bring. */
  changesTo(head: string): PackedChanges {
    const commits: GitPushInput['commits'] = [];
    const paths = new Set<string>();
    // Each tree walked once, and a bound on all the entries read: a pack of trees that point at each other many times over is small and would be walked for ever.
    const walk = { trees: new Set<string>(), entries: 0 };
    let truncated = false;
    const seen = new Set<string>();
    const queue = [head];
    while (queue.length > 0) {
      const sha = queue.shift()!;
      if (seen.has(sha) || this.types.get(sha) !== 'commit') continue;
      seen.add(sha);
      const commit = parseCommit(this.contents.get(sha)!);
      if (commits.length < GIT_PUSH_LISTED_COMMITS) commits.push({ sha, subject: commit.subject, author: commit.author });
      else truncated = true;
      this.walkTree(commit.tree, '', paths, walk);
      queue.push(...commit.parents);
    }
    if (paths.size > GIT_PUSH_LISTED_PATHS || walk.entries > WALKED_ENTRIES_LIMIT) truncated = true;
    return { commits, paths: [...paths].sort().slice(0, GIT_PUSH_LISTED_PATHS), truncated, alreadyOnRemote: !this.types.has(head) };
  }

  private walkTree(sha: string, prefix: string, paths: Set<string>, walk: { trees: Set<string>; entries: number }): void {
    const tree = this.contents.get(sha);
    if (!tree || walk.trees.has(sha) || paths.size > GIT_PUSH_LISTED_PATHS || walk.entries > WALKED_ENTRIES_LIMIT) return;
    walk.trees.add(sha);
    for (const entry of parseTree(tree)) {
      if (++walk.entries > WALKED_ENTRIES_LIMIT) return;
      const name = `${prefix}${entry.name}`;
      if (entry.mode === '40000') this.walkTree(entry.sha, `${name}/`, paths, walk);
      else if (this.types.has(entry.sha)) paths.add(name);
    }
  }
}

function parseCommit(body: Buffer): { tree: string; parents: string[]; author: string; subject: string } {
  const text = body.toString('utf8');
  const blank = text.indexOf('\n\n');
  const headers = (blank < 0 ? text : text.slice(0, blank)).split('\n');
  const field = (name: string) => headers.filter((line) => line.startsWith(`${name} `)).map((line) => line.slice(name.length + 1));
  const author = (field('author')[0] ?? '').replace(/ \d+ [+-]\d{4}$/, '');
  return {
    tree: field('tree')[0] ?? '',
    parents: field('parent'),
    author,
    subject: blank < 0 ? '' : (text.slice(blank + 2).split('\n')[0] ?? '').slice(0, 200),
  };
}

/** A tree object's entries: `<mode> <name>\0<20-byte id>` each. */
function parseTree(body: Buffer): Array<{ mode: string; name: string; sha: string }> {
  const entries: Array<{ mode: string; name: string; sha: string }> = [];
  let offset = 0;
  while (offset < body.length) {
    const space = body.indexOf(0x20, offset);
    const nul = body.indexOf(0, space);
    if (space < 0 || nul < 0 || nul + 21 > body.length) break;
    entries.push({ mode: body.toString('latin1', offset, space), name: body.toString('utf8', space + 1, nul), sha: body.toString('hex', nul + 1, nul + 21) });
    offset = nul + 21;
  }
  return entries;
}

/** `git cat-file --batch`'s output: `<sha> <type> <size>\n<content>\n` per object. */
function parseBatch(output: Buffer): Map<string, Buffer> {
  const objects = new Map<string, Buffer>();
  let offset = 0;
  while (offset < output.length) {
    const newline = output.indexOf(0x0a, offset);
    if (newline < 0) break;
    const [sha, , size] = output.toString('latin1', offset, newline).split(' ');
    const length = Number(size);
    if (!sha || !Number.isInteger(length)) break;
    objects.set(sha, output.subarray(newline + 1, newline + 1 + length));
    offset = newline + 1 + length + 1;
  }
  return objects;
}

/** Runs git in `cwd` with nothing of the host's git configuration; its stdout, or its failure in its own words. */
function git(args: readonly string[], cwd: string, input?: NodeJS.ReadableStream | string, keepBytes = OBJECT_BYTES_LIMIT): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd,
      env: { PATH: process.env['PATH'], HOME: cwd, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      timeout: GIT_TIMEOUT_MS,
    });
    const out: Buffer[] = [];
    let kept = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      kept += chunk.length;
      // Past the bound the listing is cut (the walk says truncated); the rest is not held.
      if (kept <= keepBytes) out.push(chunk);
      else child.kill();
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.stdin.on('error', () => {});
    if (typeof input === 'string') child.stdin.end(input);
    else if (input) input.pipe(child.stdin);
    else child.stdin.end();
    child.on('error', (err) => reject(new Error(`git could not run: ${err.message}`)));
    child.on('close', (code) =>
      code === 0 || kept > keepBytes ? resolve(Buffer.concat(out)) : reject(new Error(`git ${args[0]}: ${stderr.trim().split('\n').slice(-2).join(' ')}`)),
    );
  });
}
