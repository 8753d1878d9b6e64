import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { credentialFor } from '@svc/service-kit';
import { hostGit } from '../../workspace/host-git.js';
import { SANDBOX_PATHS } from '../sandbox-layout.js';
import { workBranchOf } from '../worker-policy.js';
import { madeBefore, type SkippedStep, type SpawnStep } from '../spawn-step.js';

export const cloneSkipped: SkippedStep = { number: '4.5', name: 'clone_repository', skipped: 'the template has no [workspace] section' };

/**
 * Step 4.5: the template's repository into /workspace (docs/workspace.md). git runs on the
 * session service's host, in a directory of its own, with the control plane's token for the
 * repository's host given in its environment (an `http.extraHeader` through GIT_CONFIG_*): never
 * on a command line (`ps` shows those), never in a file, so never in the sandbox — its
 * `.git/config` names the repository without a credential. The ref is fetched (a branch, a tag
 * or a commit; unset, the remote's default), the work branch made from it, and the tree, `.git`
 * included, imported into the sandbox. Fails with git's own words, the token taken out.
 */
export const cloneRepository: SpawnStep = {
  number: '4.5',
  name: 'clone_repository',
  async run(spawn) {
    const workspace = spawn.request.template.workspace!;
    const repo = new URL(workspace.repo);
    const branch = workBranchOf(spawn.request.template, spawn.ids.sessionId);
    const token = credentialFor(spawn.deps.gitCredentials, repo);
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-clone-'));
    try {
      const clone = path.join(dir, 'repository');
      const git = hostGit(dir, token, repo);
      await git(['init', '--quiet', clone]);
      await git(['-C', clone, 'remote', 'add', 'origin', workspace.repo]);
      await git(['-C', clone, 'fetch', '--quiet', ...(workspace.depth ? ['--depth', String(workspace.depth)] : []), 'origin', workspace.ref ?? 'HEAD']);
      await git(['-C', clone, 'checkout', '--quiet', '-B', branch, 'FETCH_HEAD']);
      const base = (await git(['-C', clone, 'rev-parse', 'HEAD'])).trim();
      await madeBefore(spawn, 'sandbox').importDirectory(clone, SANDBOX_PATHS.workspace);
      spawn.made.baseCommit = base;
      return {
        repo: workspace.repo,
        ref: workspace.ref ?? '(the remote default)',
        branch,
        base_commit: base,
        credential: token ? "the control plane's, for its host" : 'none',
      };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
};
