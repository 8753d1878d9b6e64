import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { apiPaths, type WorkspaceChanges } from '@svc/protocol';
import { startGitHubApi, startGitServer, type GitHubApiStandIn, type GitServer } from '@svc/test-support';
import { launchBrowser } from '@svc/test-support/browser';
import { claudeBinary, CLAUDE_CODE_VERSIONS, sandboxEnvFor } from '@svc/test-support/real-agents';
import { startMockAnthropic, type MockAnthropic } from '@svc/test-support/stand-ins';
import { seriousViolations } from '../axe.js';
import { startLocalStack, type RunningStack } from '../local-stack.js';

// The newest release svc supports (issue 37 names it).
const CLAUDE_VERSION = CLAUDE_CODE_VERSIONS.at(-1)!;
/** What Claude Code is scripted to run in its workspace: edit the README and commit it. */
const CLAUDE_EDITS =
  "printf 'edited by Claude\\n' >> README.md && git add README.md && git -c user.name=Claude -c user.email=claude@example.com commit -q -m 'Claude edits the README'";

/**
 * Issue 37's console acceptance with the real agent: the local stack (`npm run up`'s) runs real
 * Claude Code on a repository served by git's http-backend, its model a stand-in; a person allows
 * its Bash call, reviews the diff in the Changes tab, pushes and opens a pull request from there.
 */
describe(`the console's Changes tab on a real Claude Code ${CLAUDE_VERSION} run (Chromium)`, () => {
  let stack: RunningStack;
  let browser: Browser;
  let forge: GitServer;
  let github: GitHubApiStandIn;
  let anthropic: MockAnthropic;
  let templates: string;
  let base: string;

  beforeAll(async () => {
    forge = await startGitServer();
    base = forge.createRepository('acme/shop', { 'README.md': 'the shop\n', 'src/main.txt': 'main\n' });
    github = await startGitHubApi(forge.token);
    anthropic = await startMockAnthropic([
      { text: 'I will edit the README and commit it.', tool: { name: 'Bash', input: { command: CLAUDE_EDITS, description: 'Edit and commit' } } },
      { text: 'Done: the README has a new line, committed.' },
    ]);
    templates = await mkdtemp(path.join(tmpdir(), 'svc-console-real-claude-'));
    const builtIn = await readFile(fileURLToPath(new URL('../../../services/session/templates/claude.toml', import.meta.url)), 'utf8');
    await writeFile(path.join(templates, 'claude-shop.toml'), `${builtIn}\n[workspace]\nrepo = "${forge.url}/acme/shop.git"\n`);
    const host = new URL(forge.url).host;
    [stack, browser] = await Promise.all([
      startLocalStack({
        SVC_TEMPLATES_DIR: templates,
        ...sandboxEnvFor(claudeBinary(CLAUDE_VERSION)),
        SVC_GIT_CREDENTIALS: JSON.stringify({ [host]: forge.token }),
        SVC_GIT_FORGES: JSON.stringify({ [host]: { type: 'github', api_url: github.url } }),
        SVC_ANTHROPIC_API_KEY: 'sk-ant-console-real-claude',
        SVC_ANTHROPIC_UPSTREAM_URL: anthropic.url,
      }),
      launchBrowser(),
    ]);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await Promise.all([github?.stop(), forge?.stop(), anthropic?.stop()]);
    if (templates) await rm(templates, { recursive: true, force: true });
  }, 60_000);

  async function signedIn(): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.goto(`${stack.url}/sessions#code=${stack.signInCode}`);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    return page;
  }

  const bareGit = (...args: string[]) => spawnSync('git', ['--git-dir', path.join(forge.root, 'acme/shop.git'), ...args], { encoding: 'utf8' }).stdout;

  it("a person allows Claude's Bash call, reviews its commit's diff in the Changes tab, pushes it and opens a pull request there; axe finds nothing serious", async () => {
    const page = await signedIn();
    await page.getByLabel('Template').selectOption('claude-shop');
    await page.getByLabel('First message (optional)').fill('Add a line to the README and commit it.');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/\/workers\/wrk_/);
    const workerId = page.url().split('/').at(-1)!;

    // Claude asks to run its Bash command: allowed from the page.
    const card = page.locator('article.approval[data-approval]');
    await card.waitFor({ timeout: 60_000 });
    expect(await card.textContent()).toContain("printf 'edited by Claude");
    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    await page.locator('header .activity-idle').waitFor({ timeout: 60_000 });

    // The Changes tab shows what the sidecar reported after the turn: the stored diff, line for line.
    await page.getByRole('tab', { name: 'Changes' }).click();
    const panel = page.getByRole('tabpanel', { name: 'Changes' });
    const readme = panel.getByRole('region', { name: 'README.md' });
    await readme.waitFor({ timeout: 30_000 });
    await panel.getByText('1 file changed: 1 modified').waitFor();
    const token = await stack.signInToken();
    const read = (url: string) => fetch(`${stack.url}${url}`, { headers: { authorization: `Bearer ${token}` } });
    const changes = (await (await read(apiPaths.changes(workerId))).json()) as WorkspaceChanges;
    expect(changes).toMatchObject({ base_commit: base, files: [{ path: 'README.md', status: 'modified', additions: 1, deletions: 0 }] });
    const storedDiff = await (await read(apiPaths.changesDiff(workerId))).text();
    const added = storedDiff.split('\n').filter((line) => line.startsWith('+') && !line.startsWith('+++'));
    expect(added).toEqual(['+edited by Claude']);
    expect(await readme.locator('.diff-code-insert').allTextContents()).toEqual(['edited by Claude']);
    expect(await seriousViolations(page, 'changes of a real Claude run')).toEqual([]);

    // Push from the tab: the work branch gets Claude's own commit, whose diff is the one shown.
    const branch = ((await panel.locator('.changes-summary code').first().textContent()) ?? '').trim();
    expect(branch).toMatch(/^svc\/ses_/);
    await panel.getByRole('button', { name: 'Push…' }).click();
    const pushForm = panel.getByRole('form', { name: 'Push the changes' });
    expect(await pushForm.getByLabel('Branch').inputValue()).toBe(branch);
    await pushForm.getByRole('button', { name: 'Push' }).click();
    await panel
      .getByRole('status')
      .filter({ hasText: `to ${branch} by local-user` })
      .waitFor({ timeout: 30_000 });
    const pushedHead = bareGit('rev-parse', `refs/heads/${branch}`).trim();
    expect(pushedHead).toBe(changes.head_commit);
    expect(bareGit('log', '-1', '--format=%an|%s', pushedHead).trim()).toBe('Claude|Claude edits the README');
    expect(storedDiff).toBe(bareGit('diff', base, pushedHead));

    // And the pull request: the stand-in got the branch, the base and the title; its link is on the page.
    await panel.getByRole('button', { name: 'Open pull request…' }).click();
    const pullRequestForm = panel.getByRole('form', { name: 'Open a pull request' });
    await pullRequestForm.getByLabel('Title').fill('Claude edits the README');
    await pullRequestForm.getByRole('button', { name: 'Open pull request' }).click();
    await panel.getByRole('link', { name: 'Pull request #1: Claude edits the README' }).waitFor({ timeout: 15_000 });
    expect(github.pulls).toEqual([expect.objectContaining({ owner: 'acme', repo: 'shop', head: branch, base: 'main', title: 'Claude edits the README' })]);
    expect(await seriousViolations(page, 'changes with a pull request')).toEqual([]);
    await page.context().close();
  }, 180_000);
});
