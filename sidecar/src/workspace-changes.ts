import { spawn } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { apiPaths, WORKSPACE_LISTED_FILES, WORKSPACE_PATCH_LIMIT_BYTES, type ChangedFile, type ChangesReport, type SidecarWorkspace } from '@svc/protocol';
import { backoffMs, type ControlPlaneClient } from './http-client.js';

/** How often a report is sent before it is given up (the next turn's reports again). */
const REPORT_ATTEMPTS = 6;

/** How long one git command of a report may take. */
const GIT_TIMEOUT_MS = 120_000;

/** Runs git in the workspace with `env` added; its stdout. Output past `keepBytes` is counted, not kept. */
function git(workspace: string, args: readonly string[], env: NodeJS.ProcessEnv, keepBytes = 64 * 1024 * 1024): Promise<{ stdout: Buffer; bytes: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['-C', workspace, ...args], { env: { ...process.env, ...env }, timeout: GIT_TIMEOUT_MS });
    const kept: Buffer[] = [];
    let bytes = 0;
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      if (bytes < keepBytes) kept.push(chunk.subarray(0, keepBytes - bytes));
      bytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve({ stdout: Buffer.concat(kept), bytes }) : reject(new Error(`git ${args[0]} exited with ${code}: ${stderr.trim().slice(0, 500)}`)),
    );
  });
}

/** `git diff --numstat -z` and `--name-status -z` (with renames) read together into files. */
function changedFiles(numstat: string, nameStatus: string): ChangedFile[] {
  const statuses = nameStatus.split('\0');
  const files: ChangedFile[] = [];
  const kinds: Array<{ status: ChangedFile['status']; path: string; old_path?: string }> = [];
  for (let i = 0; i < statuses.length - 1;) {
    const code = statuses[i]!;
    if (code.startsWith('R') || code.startsWith('C')) {
      kinds.push({ status: code.startsWith('R') ? 'renamed' : 'added', old_path: statuses[i + 1]!, path: statuses[i + 2]! });
      i += 3;
    } else {
      kinds.push({ status: code === 'A' ? 'added' : code === 'D' ? 'deleted' : 'modified', path: statuses[i + 1]! });
      i += 2;
    }
  }
  const counts = new Map<string, { additions: number; deletions: number; binary: boolean }>();
  const parts = numstat.split('\0');
  for (let i = 0; i < parts.length - 1;) {
    const [added, deleted, inline] = parts[i]!.split('\t');
    // A rename: the path is empty here, and the old and new paths follow.
    const filePath = inline === '' ? parts[i + 2]! : inline!;
    i += inline === '' ? 3 : 1;
    counts.set(filePath, { additions: Number(added) || 0, deletions: Number(deleted) || 0, binary: added === '-' });
  }
  for (const kind of kinds) {
    const count = counts.get(kind.path) ?? { additions: 0, deletions: 0, binary: false };
    files.push({ ...kind, additions: count.additions, deletions: count.deletions, ...(count.binary ? { binary: true } : {}) });
  }
  return files;
}

/** A patch kept to `limit` bytes, cut at the start of a file's section (never within one). */
export function boundedPatch(patch: string, limit: number): string {
  if (Buffer.byteLength(patch) <= limit) return patch;
  const head = Buffer.from(patch).subarray(0, limit).toString('utf8');
  const cut = head.lastIndexOf('\ndiff --git ');
  return cut < 0 ? '' : head.slice(0, cut + 1);
}

/**
 * The workspace's changes against its base commit (docs/workspace.md, "Changes"): what a
 * `git add -A` would stage — untracked files included, ignored ones not — in an index of its own
 * (the agent's index is left as it is), as files with their status and line counts and a unified
 * diff kept to `WORKSPACE_PATCH_LIMIT_BYTES`.
 */
export async function readChanges(workspace: SidecarWorkspace): Promise<ChangesReport> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-changes-'));
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index'), GIT_OPTIONAL_LOCKS: '0' };
    await copyFile(path.join(workspace.path, '.git', 'index'), env.GIT_INDEX_FILE).catch(() => undefined);
    const run = (args: readonly string[], keep?: number) => git(workspace.path, args, env, keep);
    await run(['add', '-A']);
    const head = (await run(['rev-parse', 'HEAD'])).stdout.toString().trim();
    const diff = ['diff', '--cached', '-M', '--no-color', '--no-ext-diff', workspace.base_commit];
    const [numstat, nameStatus] = await Promise.all([run([...diff, '--numstat', '-z']), run([...diff, '--name-status', '-z'])]);
    const files = changedFiles(numstat.stdout.toString(), nameStatus.stdout.toString());
    // A little past the bound, so the cut falls at a file's start within it.
    const patch = await run([...diff, '--binary'], WORKSPACE_PATCH_LIMIT_BYTES + 1);
    const text = boundedPatch(patch.stdout.toString('utf8'), WORKSPACE_PATCH_LIMIT_BYTES);
    return {
      base_commit: workspace.base_commit,
      head_commit: head,
      branch: workspace.branch,
      files: files.slice(0, WORKSPACE_LISTED_FILES),
      ...(files.length > WORKSPACE_LISTED_FILES ? { files_truncated: true } : {}),
      patch: text,
      patch_bytes: patch.bytes,
      truncated: Buffer.byteLength(text) < patch.bytes,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Reports the workspace's changes to the control plane (`POST …/changes`), one report at a time:
 * a report asked for while one is under way is made once that one is done, with what is then there.
 */
export function createChangesReporter(options: { workspace: SidecarWorkspace; workerId: string; client: ControlPlaneClient; warn(message: string): void }) {
  let running: Promise<void> | undefined;
  let again = false;

  async function reportOnce(): Promise<void> {
    const report = await readChanges(options.workspace);
    for (let attempt = 0; ; attempt++) {
      const outcome = await options.client.send('POST', apiPaths.changes(options.workerId), report);
      if (outcome.ok) return;
      if (!outcome.retryable || attempt >= REPORT_ATTEMPTS - 1) return options.warn(`the workspace's changes could not be reported: ${outcome.reason}`);
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt, outcome.retryAfterMs)));
    }
  }

  function report(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await reportOnce().catch((err: unknown) => options.warn(`the workspace's changes could not be read: ${(err as Error).message}`));
      } while (again);
    })().finally(() => (running = undefined));
    return running;
  }

  return { report };
}

export type ChangesReporter = ReturnType<typeof createChangesReporter>;
