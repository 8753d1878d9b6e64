import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PullRequestRpcType, WorkerWorkspace } from '@svc/protocol';
import { startGitHubApi, type GitHubApiStandIn } from '@svc/test-support';
import { openPullRequest, parseForges } from './forges.js';

const WORKSPACE: WorkerWorkspace = {
  repo: 'https://git.example.com/acme/shop.git',
  branch: 'svc/ses_1',
  push_rules: { auto_approve: [], deny: [], ask: [] },
  autonomous: false,
};
const REQUEST: PullRequestRpcType = { caller: { sub: 'alice', groups: [], admin: false }, worker_id: 'wrk_1', head: 'svc/ses_1', title: 'The work' };

describe('pull requests through a forge (GitHub’s REST API)', () => {
  let github: GitHubApiStandIn;
  const credentials = new Map([['git.example.com', 'forge-token']]);
  beforeAll(async () => {
    github = await startGitHubApi('forge-token');
  });
  afterAll(() => github?.stop());
  const forges = () => parseForges(JSON.stringify({ 'git.example.com': { type: 'github', api_url: `${github.url}/` } }));

  it('opens one of the pushed branch onto the default branch (or the one asked), with the control plane’s token', async () => {
    const record = await openPullRequest(forges(), credentials, WORKSPACE, REQUEST);
    expect(record).toMatchObject({
      number: 1,
      head: 'svc/ses_1',
      base: 'main',
      title: 'The work',
      by: 'alice',
      url: 'https://github.example/acme/shop/pull/1',
    });
    await openPullRequest(forges(), credentials, WORKSPACE, { ...REQUEST, head: 'svc/ses_2', base: 'release', body: 'why' });
    expect(github.pulls.at(-1)).toEqual({ owner: 'acme', repo: 'shop', title: 'The work', head: 'svc/ses_2', base: 'release', body: 'why' });
  });

  it('says what went wrong: no forge for the host, a second request of the same branch, a refused token, an API that does not answer', async () => {
    await expect(openPullRequest(parseForges(undefined), credentials, WORKSPACE, REQUEST)).rejects.toMatchObject({ code: 'forge_not_configured' });
    await expect(openPullRequest(forges(), credentials, WORKSPACE, REQUEST)).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringContaining('already exists'),
    });
    await expect(openPullRequest(forges(), new Map([['git.example.com', 'wrong']]), WORKSPACE, { ...REQUEST, head: 'x' })).rejects.toMatchObject({
      code: 'forge_failed',
      message: expect.stringContaining('401 Bad credentials'),
    });
    const down = parseForges(JSON.stringify({ 'git.example.com': { type: 'github', api_url: 'http://127.0.0.1:1' } }));
    await expect(openPullRequest(down, credentials, WORKSPACE, { ...REQUEST, base: 'main' })).rejects.toMatchObject({ code: 'forge_failed' });
    await expect(openPullRequest(forges(), credentials, { ...WORKSPACE, repo: 'https://git.example.com/solo.git' }, REQUEST)).rejects.toMatchObject({
      code: 'forge_not_configured',
    });
  });

  it('SVC_GIT_FORGES: github.com known; a malformed value stops the start naming the variable', () => {
    expect(parseForges(undefined).get('github.com')).toEqual({ type: 'github', api_url: 'https://api.github.com' });
    expect(() => parseForges('{')).toThrow(/SVC_GIT_FORGES .* not JSON/);
    expect(() => parseForges('{"h": {"type": "gitlab", "api_url": "https://x"}}')).toThrow(/"type": "github"/);
    expect(() => parseForges('{"h": {"type": "github"}}')).toThrow(/api_url/);
  });
});
