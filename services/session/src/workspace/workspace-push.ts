import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CodedError, type PushRecord, type WorkerWorkspace, type WorkspacePushRpcType } from '@svc/protocol';
import { credentialFor, type GitCredentials } from '@svc/service-kit';
import type { Sandbox } from '../sandbox/provider.js';
import { SANDBOX_PATHS } from '../spawn/sandbox-layout.js';
import { hostGit } from './host-git.js';

/** Where the bundle of the work is written in the sandbox, to be read out. */
const BUNDLE_PATH = '/tmp/svc-push.bundle';
/** How long a git command in the sandbox may take (a commit of many files, a bundle of a large history). */
const SANDBOX_GIT_TIMEOUT_MS = 5 * 60_000;

/** Runs git on the workspace in the sandbox: its output, or a failure naming what failed. */
async function gitInSandbox(sandbox: Sandbox, args: readonly string[], what: string): Promise<string> {
  const result = await sandbox.exec(['git', '-C', SANDBOX_PATHS.workspace, ...args], { timeoutMs: SANDBOX_GIT_TIMEOUT_MS });
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
export async function pushWork(sandbox: Sandbox, workspace: WorkerWorkspace, credentials: GitCredentials, request: WorkspacePushRpcType): Promise<PushRecord> {
  const branch = request.branch ?? workspace.branch;
  const status = await gitInSandbox(sandbox, ['status', '--porcelain'], 'git status');
  if (status.trim() !== '') {
    await gitInSandbox(sandbox, ['add', '-A'], 'git add');
    const message = request.message ?? `Changes of svc worker ${request.worker_id}`;
    const author = ['-c', `user.name=${request.author.name}`, '-c', `user.email=${request.author.email}`];
    await gitInSandbox(sandbox, [...author, 'commit', '--quiet', '--no-verify', '-m', message], 'git commit');
  }
  const commit = (await gitInSandbox(sandbox, ['rev-parse', 'HEAD'], 'git rev-parse')).trim();
  await gitInSandbox(sandbox, ['bundle', 'create', '--quiet', BUNDLE_PATH, 'HEAD'], 'git bundle');
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-push-'));
  try {
    const bundle = path.join(dir, 'work.bundle');
    await sandbox.exportFile(BUNDLE_PATH, bundle);
    const repo = new URL(workspace.repo);
    const git = hostGit(dir, credentialFor(credentials, repo), repo);
    const local = path.join(dir, 'push.git');
    await git(['init', '--quiet', '--bare', local]);
    await git(['-C', local, 'fetch', '--quiet', bundle, 'HEAD']);
    const fetched = (await git(['-C', local, 'rev-parse', 'FETCH_HEAD'])).trim();
    if (fetched !== commit) throw new CodedError('conflict', `the workspace's bundle holds ${fetched}, not its HEAD ${commit}: try again`);
    await git(['-C', local, 'push', '--quiet', workspace.repo, `${commit}:refs/heads/${branch}`]).catch((err: Error) => {
      throw new CodedError('conflict', err.message);
    });
    return { branch, commit, remote: workspace.repo, by: request.caller.sub, at: new Date().toISOString() };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await sandbox.exec(['rm', '-f', BUNDLE_PATH]).catch(() => undefined);
  }
}
