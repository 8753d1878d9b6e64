import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CodedError, type PushRecord, type WorkerWorkspace, type WorkspacePushRpcType } from '@svc/protocol';
import { credentialFor, type GitCredentials } from '@svc/service-kit';
import type { Sandbox } from '../sandbox/provider.js';
import { SANDBOX_PATHS } from '../spawn/sandbox-layout.js';
import { hostGit } from './host-git.js';

/** The image's git, not one the agent put on the PATH (`/usr/local/bin` is the sandbox's to write). */
export const SANDBOX_GIT = '/usr/bin/git';
/** The largest bundle of the work read out of a sandbox. */
const BUNDLE_LIMIT_BYTES = 2 * 1024 * 1024 * 1024;
/** What a bundle file begins with (git's bundle formats v2 and v3): anything else is not fetched from. */
const BUNDLE_HEADERS = ['# v2 git bundle\n', '# v3 git bundle\n'];

/** Where the bundle of the work is written in the sandbox, to be read out. */
const BUNDLE_PATH = '/tmp/svc-push.bundle';
/** How long a git command in the sandbox may take (a commit of many files, a bundle of a large history). */
const SANDBOX_GIT_TIMEOUT_MS = 5 * 60_000;

/** Runs git on the workspace in the sandbox: its output, or a failure naming what failed. */
async function gitInSandbox(sandbox: Sandbox, args: readonly string[], what: string): Promise<string> {
  const result = await sandbox.exec([SANDBOX_GIT, '-C', SANDBOX_PATHS.workspace, ...args], { timeoutMs: SANDBOX_GIT_TIMEOUT_MS });
  if (result.code !== 0) throw new CodedError('conflict', `${what} failed in the workspace: ${result.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return result.stdout;
}

/**
 * A person's push of the worker's work (docs/workspace.md, "Out, by a person"): in the sandbox,
 * what is uncommitted is committed in the person's name (the agent's hooks skipped) and the work
 * branch written to a bundle; the bundle is read out to the session service's host, fetched
 * into a repository of its own there — data only: nothing of the sandbox's repository, its
 * configuration or hooks, runs on the host — and pushed to the remote with the control plane's
 * credential, which never enters the sandbox.
 */
/** The bundle read out of the sandbox is one by its first line: a bundle, not a file that names a repository. */
async function checkBundleHeader(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(16);
    await handle.read(head, 0, 16, 0);
    if (!BUNDLE_HEADERS.includes(head.toString('latin1'))) throw new CodedError('conflict', "the workspace's bundle is not a git bundle: try again");
  } finally {
    await handle.close();
  }
}

export async function pushWork(sandbox: Sandbox, workspace: WorkerWorkspace, credentials: GitCredentials, request: WorkspacePushRpcType): Promise<PushRecord> {
  const branch = request.branch ?? workspace.branch;
  const status = await gitInSandbox(sandbox, ['status', '--porcelain'], 'git status');
  if (status.trim() !== '') {
    await gitInSandbox(sandbox, ['add', '-A'], 'git add');
    const message = request.message ?? `Changes of svc worker ${request.worker_id}`;
    // No hook of the agent's runs for a person's commit (pre-commit, prepare-commit-msg, post-commit…).
    const person = ['-c', `user.name=${request.author.name}`, '-c', `user.email=${request.author.email}`, '-c', 'core.hooksPath=/dev/null'];
    await gitInSandbox(sandbox, [...person, 'commit', '--quiet', '--no-verify', '-m', message], 'git commit');
  }
  const commit = (await gitInSandbox(sandbox, ['rev-parse', 'HEAD'], 'git rev-parse')).trim();
  await gitInSandbox(sandbox, ['bundle', 'create', '--quiet', BUNDLE_PATH, 'HEAD'], 'git bundle');
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-push-'));
  try {
    const bundle = path.join(dir, 'work.bundle');
    await sandbox.exportFile(BUNDLE_PATH, bundle, BUNDLE_LIMIT_BYTES);
    await checkBundleHeader(bundle);
    const repo = new URL(workspace.repo);
    const git = hostGit(dir, credentialFor(credentials, repo), repo);
    const local = path.join(dir, 'push.git');
    await git(['init', '--quiet', '--bare', local]);
    // Unbundled, not fetched: no transport (a file that is not a bundle could name a repository to fetch from).
    const refs = await git(['-C', local, 'bundle', 'unbundle', bundle]);
    if (!refs.split('\n').some((line) => line.startsWith(`${commit} `)))
      throw new CodedError('conflict', `the workspace's bundle does not hold its HEAD ${commit}: try again`);
    await git(['-C', local, 'push', '--quiet', workspace.repo, `${commit}:refs/heads/${branch}`]).catch((err: Error) => {
      throw new CodedError('conflict', err.message);
    });
    return { branch, commit, remote: workspace.repo, by: request.caller.sub, at: new Date().toISOString() };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await sandbox.exec(['/usr/bin/rm', '-f', BUNDLE_PATH]).catch(() => undefined);
  }
}
