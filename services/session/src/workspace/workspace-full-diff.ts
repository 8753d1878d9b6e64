import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FullPatches, KeptPatch } from '@svc/bus';
import { CodedError, WORKSPACE_FULL_PATCH_LIMIT_BYTES, type WorkspaceFullDiffRpcType } from '@svc/protocol';
import type { Sandbox } from '../sandbox/provider.js';
import { SANDBOX_PATHS } from '../spawn/sandbox-layout.js';
import { SANDBOX_GIT } from './workspace-push.js';

const FULL_INDEX = '/tmp/svc-full.index';
const FULL_PATCH = '/tmp/svc-full.patch';
const GIT_TIMEOUT_MS = 5 * 60_000;

/**
 * The workspace's whole diff against its base, read now in the sandbox as its sidecar reads a
 * report (what `git add -A` would stage, in an index of its own: the agent's is left as it is),
 * however large (up to `WORKSPACE_FULL_PATCH_LIMIT_BYTES`), written to a file there, read out to
 * the host and kept in the object store under its SHA-256 — streamed, never held whole.
 */
export async function keepFullDiff(sandbox: Sandbox, patches: FullPatches, request: WorkspaceFullDiffRpcType): Promise<KeptPatch> {
  const git = async (args: readonly string[], what: string) => {
    // `env` sets the index for git without a shell.
    const result = await sandbox.exec(
      ['/usr/bin/env', `GIT_INDEX_FILE=${FULL_INDEX}`, 'GIT_OPTIONAL_LOCKS=0', SANDBOX_GIT, '-C', SANDBOX_PATHS.workspace, ...args],
      {
        timeoutMs: GIT_TIMEOUT_MS,
      },
    );
    if (result.code !== 0) throw new CodedError('conflict', `${what} failed in the workspace: ${result.stderr.trim().split('\n').slice(-2).join(' ')}`);
  };
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-full-diff-'));
  try {
    // What the sandbox left at these paths (a link, a FIFO) goes first: git writes files of its own.
    await sandbox.exec(['/usr/bin/rm', '-f', FULL_INDEX, FULL_PATCH]);
    await sandbox.exec(['/usr/bin/cp', `${SANDBOX_PATHS.workspace}/.git/index`, FULL_INDEX]);
    await git(['add', '-A'], 'git add');
    await git(
      [
        'diff',
        '--cached',
        '-M',
        '--binary',
        '--no-color',
        '--no-ext-diff',
        `--output=${FULL_PATCH}`,
        request.base_commit,
        ...(request.path ? ['--', request.path] : []),
      ],
      'git diff',
    );
    const local = path.join(dir, 'full.patch');
    await sandbox.exportFile(FULL_PATCH, local, WORKSPACE_FULL_PATCH_LIMIT_BYTES);
    const { size } = await stat(local);
    const hash = createHash('sha256');
    await pipeline(createReadStream(local), hash);
    return await patches.keep(request.worker_id, hash.digest('hex'), size, () => Readable.toWeb(createReadStream(local)) as ReadableStream<Uint8Array>);
  } finally {
    await rm(dir, { recursive: true, force: true });
    await sandbox.exec(['/usr/bin/rm', '-f', FULL_INDEX, FULL_PATCH]).catch(() => undefined);
  }
}
