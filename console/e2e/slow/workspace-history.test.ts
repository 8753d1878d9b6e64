import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { apiPaths, type AuditRecord, type ListResponseOf } from '@svc/protocol';
import { startGitHubApi, startGitServer, type GitHubApiStandIn, type GitServer } from '@svc/test-support';
import { launchBrowser } from '@svc/test-support/browser';
import { demoAgentTemplate } from '@svc/test-support/stand-ins';
import { seriousViolations } from '../axe.js';
import { CONSOLE_TEMPLATES, openCard, signedIn as signIn, startDemo, startFrom } from '../console-pages.js';
import { startLocalStack, type RunningStack } from '../local-stack.js';

/** How long the browser's network stays down while the agent goes on. */
const OFFLINE_MS = 5_000;

/** The conversation demo on the forge's `acme/app` (docs/workspace.md): its Write, allowed by its lists, changes the workspace. */
const demoOnRepository = (forgeUrl: string) =>
  demoAgentTemplate({ description: 'The demo agent in a conversation, on a repository', tables: `[workspace]\nrepo = "${forgeUrl}/acme/app.git"\n` });

/**
 * The console's longer runs, kept out of `npm test` (docs/testing.md): a worker's repository
 * (its Changes tab, a push and a pull request, its Terminal tab), a long or interrupted history,
 * and the screenshots. `console.test.ts` holds the rest, with the same stack.
 */
describe('the web console in a real Chromium, against the local stack: repositories, long histories, screenshots', () => {
  let stack: RunningStack;
  let browser: Browser;
  let templatesDir: string;
  /** A forge on loopback (git's smart HTTP); only the stack has its token (SVC_GIT_CREDENTIALS). */
  let forge: GitServer;
  /** GitHub's API as that forge's: pull requests. */
  let github: GitHubApiStandIn;
  beforeAll(async () => {
    forge = await startGitServer();
    forge.createRepository('acme/app', { 'README.md': 'the app\n', 'src/main.ts': "export const main = 'main';\n" });
    github = await startGitHubApi(forge.token);
    templatesDir = await mkdtemp(path.join(tmpdir(), 'svc-console-templates-'));
    const templates = { ...CONSOLE_TEMPLATES, 'demo-repo': demoOnRepository(forge.url) };
    for (const [name, text] of Object.entries(templates)) await writeFile(path.join(templatesDir, `${name}.toml`), text);
    const forgeHost = new URL(forge.url).host;
    [stack, browser] = await Promise.all([
      startLocalStack({
        SVC_TEMPLATES_DIR: templatesDir,
        SVC_GIT_CREDENTIALS: JSON.stringify({ [forgeHost]: forge.token }),
        SVC_GIT_FORGES: JSON.stringify({ [forgeHost]: { type: 'github', api_url: github.url } }),
      }),
      launchBrowser(),
    ]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await github?.stop();
    await forge?.stop();
    if (templatesDir) await rm(templatesDir, { recursive: true, force: true });
  }, 60_000);

  const signedIn = (path: string, viewport?: { width: number; height: number }) => signIn(browser, stack, path, viewport);

  /** Posts `count` assistant events as the worker's sidecar does (its token, batches of 500), numbered from `from`, each with `text`. */
  async function postAsWorker(workerId: string, count: number, from = 1, text = (n: number) => `posted line ${n}`): Promise<void> {
    const token = await stack.workerToken(workerId);
    for (let start = 0; start < count; start += 500) {
      const events = Array.from({ length: Math.min(500, count - start) }, (_, i) => ({
        type: 'assistant',
        uid: `posted-${from + start + i}`,
        ts: new Date().toISOString(),
        data: { text: text(from + start + i) },
      }));
      const response = await fetch(`${stack.url}/v1/workers/${workerId}/sdk-events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      expect(response.status).toBe(202);
    }
  }

  /** A token of the local user, as the CLI gets one (for the stack's sign-in code). */
  async function localUserToken(): Promise<string> {
    const response = await fetch(`${stack.url}/v1/local/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: stack.signInCode }),
    });
    return ((await response.json()) as { token: string }).token;
  }

  it(`the network drops for ${OFFLINE_MS / 1000} s while events arrive: the page says it is offline, then catches up: every event once, none lost`, async () => {
    const page = await signedIn('/sessions', { width: 1280, height: 3200 });
    const workerId = await startDemo(page);
    await openCard(page).waitFor({ timeout: 30_000 });
    await page.getByText('live', { exact: true }).waitFor();
    await page.context().setOffline(true);
    await page.getByText('offline: waiting for the network').waitFor();
    // Meanwhile the agent goes on: 40 events, and the gateway stores them.
    await postAsWorker(workerId, 40);
    await new Promise((resolve) => setTimeout(resolve, OFFLINE_MS));
    await page.context().setOffline(false);
    await page.getByText('live', { exact: true }).waitFor({ timeout: 15_000 });
    const listed = await fetch(`${stack.url}/v1/workers/${workerId}/sdk-events?limit=1000`, {
      headers: { authorization: `Bearer ${await localUserToken()}` },
    }).then(async (response) => ((await response.json()) as { items: Array<{ id: string }> }).items.map((e) => e.id));
    await expect.poll(() => page.locator('[data-event-id]').count(), { timeout: 10_000 }).toBe(listed.length);
    const shown = await page.locator('[data-event-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-event-id')!));
    expect(shown).toEqual(listed);
    expect(new Set(shown).size).toBe(shown.length);
    expect(await page.getByText('reconnected; resumed after event').count()).toBe(1);
    await page.context().close();
  }, 90_000);

  it('a long history (3,000 events) opens at its end with the old request pinned; scrolling up reads earlier pages to the first event; few rows are in the page', async () => {
    const page = await signedIn('/sessions');
    const workerId = await startDemo(page);
    await openCard(page).waitFor({ timeout: 30_000 });
    await postAsWorker(workerId, 3000);
    await page.reload();
    // The code is not kept across a reload (the page's memory only): it is typed again.
    await page.getByLabel(/Sign-in code/).fill(stack.signInCode);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    await page.getByText('posted line 3000').waitFor({ timeout: 10_000 });
    // Its request is older than the page read first, and still pinned, decidable.
    await openCard(page).waitFor();
    await page.getByText(/^200 of 3,0\d\d events; scroll up for earlier ones$/).waitFor();
    expect(await page.locator('div.events li').count()).toBeLessThan(60);
    const list = page.getByRole('log', { name: 'Events' });
    for (let i = 0; i < 40 && (await page.getByText(/events, from the first$/).count()) === 0; i++) {
      await list.evaluate((element) => (element.scrollTop = 0));
      await page.waitForTimeout(150);
    }
    await page.getByText(/^3,0\d\d events, from the first$/).waitFor();
    await list.evaluate((element) => (element.scrollTop = 0));
    await page.locator('[data-event-id="1"]').waitFor();
    expect(await page.locator('div.events li').count()).toBeLessThan(60);
    await page.context().close();
  }, 90_000);

  it('events come in quick batches, each row taller than its estimate: the list keeps the newest in view; scrolled up by the person it stays put; back at the end it follows again', async () => {
    const page = await signedIn('/sessions', { width: 390, height: 844 });
    const workerId = await startFrom(page, 'demo-talk');
    await page.locator('header .activity-idle').waitFor({ timeout: 30_000 });
    const list = page.getByRole('log', { name: 'Events' });
    const position = () => list.evaluate((element) => ({ top: element.scrollTop, fromEnd: element.scrollHeight - element.clientHeight - element.scrollTop }));
    // Six paragraphs each: a row about four times as tall as the list estimates before measuring it.
    const tall = (n: number) => Array.from({ length: 6 }, (_, paragraph) => `tall ${n}, paragraph ${paragraph + 1}`).join('\n\n');
    for (let batch = 0; batch < 40; batch++) {
      await postAsWorker(workerId, 2, 1 + batch * 2, tall);
      await new Promise((resolve) => setTimeout(resolve, 15 + (batch % 4) * 10));
    }
    await page.getByText('tall 80, paragraph 6').waitFor({ timeout: 10_000 });
    await expect.poll(async () => (await position()).fromEnd, { timeout: 5_000 }).toBeLessThanOrEqual(1);

    // The person scrolls up: new events leave them where they are.
    await list.hover();
    await page.mouse.wheel(0, -800);
    await expect.poll(async () => (await position()).fromEnd).toBeGreaterThan(400);
    const readingAt = (await position()).top;
    const held = async () => Number(/^([\d,]+) events/.exec((await page.locator('p.history').textContent()) ?? '')?.[1]?.replaceAll(',', ''));
    const heldBefore = await held();
    await postAsWorker(workerId, 4, 81, tall);
    await expect.poll(held, { timeout: 10_000 }).toBe(heldBefore + 4);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await position()).top).toBe(readingAt);

    // Back at the end (End on the focused list): it follows again.
    await list.focus();
    await page.keyboard.press('End');
    await page.getByText('tall 84, paragraph 6').waitFor({ timeout: 5_000 });
    await postAsWorker(workerId, 2, 85, tall);
    await page.getByText('tall 86, paragraph 6').waitFor({ timeout: 10_000 });
    await page.context().close();
  }, 90_000);

  it("a worker on a repository: the Changes tab (reached by the arrow keys) shows its agent's changes as a highlighted diff, side by side or unified, and follows the next report; axe finds nothing serious", async () => {
    const page = await signedIn('/sessions');
    const workerId = await startFrom(page, 'demo-repo');
    // Its first turn writes hello.txt; once idle, the sidecar has reported the changes.
    await page.locator('header .activity-idle').waitFor({ timeout: 30_000 });
    await page.getByRole('tab', { name: 'Events' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    const changesTab = page.getByRole('tab', { name: 'Changes' });
    expect(await changesTab.getAttribute('aria-selected')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Changes');
    const panel = page.getByRole('tabpanel', { name: 'Changes' });
    const hello = panel.getByRole('region', { name: 'hello.txt' });
    await hello.waitFor({ timeout: 15_000 });
    expect(await panel.getByText('1 file changed: 1 added').count()).toBe(1);
    expect(await panel.locator('.changes-summary').textContent()).toContain(`svc/`);
    // Added: one column of new lines, each said as added.
    await hello.locator('.diff-code-insert').filter({ hasText: 'hello again' }).waitFor();
    expect(await hello.locator('.diff-code-insert').allTextContents()).toEqual(['hello from the svc demo agent', 'hello again']);

    // A change of the agent's kind in the workspace, and a turn: the sidecar reports again, the tab follows.
    await writeFile(path.join(stack.sandboxRoot(workerId), 'workspace/src/main.ts'), "export const main = 'changed by the agent';\n");
    const box = page.getByRole('textbox', { name: 'Message to the agent' });
    await box.fill('once more');
    await box.press('Enter');
    const main = panel.getByRole('region', { name: 'src/main.ts' });
    await main.waitFor({ timeout: 20_000 });
    await panel.getByText('2 files changed: 1 added, 1 modified').waitFor();
    // Side by side: the old line on the left, the new on the right, TypeScript highlighted.
    await main.locator('.diff-code-delete').filter({ hasText: "export const main = 'main';" }).waitFor();
    await main.locator('.diff-code-insert').filter({ hasText: "export const main = 'changed by the agent';" }).waitFor();
    expect(await main.locator('.diff-code-insert .token.keyword').first().textContent()).toBe('export');
    expect(await main.locator('tr.diff-line').first().locator('td').count()).toBe(4);
    await panel.getByRole('button', { name: 'Unified' }).click();
    expect(await panel.getByRole('button', { name: 'Unified' }).getAttribute('aria-pressed')).toBe('true');
    expect(await main.locator('tr.diff-line').first().locator('td').count()).toBe(3);

    // A file's diff closes and opens again from its header.
    await main.getByRole('button', { name: 'Hide the diff of src/main.ts' }).click();
    expect(await main.locator('table').count()).toBe(0);
    await main.getByRole('button', { name: 'Show the diff of src/main.ts' }).click();
    await main.locator('table').waitFor();

    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await page.setViewportSize(viewport);
      expect(await seriousViolations(page, `changes ${viewport.width}px`)).toEqual([]);
    }
    await page.context().close();
  }, 90_000);

  it('from the Changes tab a person pushes the work (the branch prefilled, the form held while sending) and opens a pull request; refusals are said in place; the sessions list shows the repository, the changes and the link', async () => {
    const page = await signedIn('/sessions');
    const workerId = await startFrom(page, 'demo-repo');
    await page.locator('header .activity-idle').waitFor({ timeout: 30_000 });
    await page.getByRole('tab', { name: 'Changes' }).click();
    const panel = page.getByRole('tabpanel', { name: 'Changes' });
    await panel.getByRole('region', { name: 'hello.txt' }).waitFor({ timeout: 15_000 });
    const branch = ((await panel.locator('.changes-summary code').first().textContent()) ?? '').trim();
    expect(branch).toMatch(/^svc\/ses_/);

    // Nothing pushed yet: the gateway refuses the pull request, and the form says why.
    await panel.getByRole('button', { name: 'Open pull request…' }).click();
    const pullRequestForm = panel.getByRole('form', { name: 'Open a pull request' });
    await pullRequestForm.getByLabel('Title').fill("The agent's work");
    await pullRequestForm.getByLabel('Description (optional)').fill('Reviewed in svc.');
    await pullRequestForm.getByRole('button', { name: 'Open pull request' }).click();
    await panel
      .getByRole('alert')
      .filter({ hasText: /^No pull request: .*has not been pushed/ })
      .waitFor({ timeout: 10_000 });

    // Push: the field holds the work branch; while the push is under way the form is held.
    await panel.getByRole('button', { name: 'Push…' }).click();
    const pushForm = panel.getByRole('form', { name: 'Push the changes' });
    expect(await pushForm.getByLabel('Branch').inputValue()).toBe(branch);
    await pushForm.getByLabel('Commit message (optional)').fill('what the agent left');
    let releasePush!: () => void;
    const pushHeld = new Promise<void>((resolve) => (releasePush = resolve));
    await page.route(`**${apiPaths.changesPush(workerId)}`, async (route) => {
      await pushHeld;
      await route.continue();
    });
    await pushForm.getByRole('button', { name: 'Push' }).click();
    await pushForm.getByRole('button', { name: 'Pushing…' }).waitFor();
    expect(await pushForm.getByRole('button', { name: 'Pushing…' }).isDisabled()).toBe(true);
    expect(await pushForm.getByLabel('Branch').getAttribute('readonly')).not.toBeNull();
    releasePush();
    const pushed = panel.getByRole('status').filter({ hasText: `to ${branch} by local-user` });
    await pushed.waitFor({ timeout: 30_000 });
    // The branch moved on the forge to the commit the page names.
    const forgeHead = spawnSync('git', ['--git-dir', path.join(forge.root, 'acme/app.git'), 'rev-parse', `refs/heads/${branch}`], {
      encoding: 'utf8',
    }).stdout.trim();
    expect(forgeHead).toMatch(/^[0-9a-f]{40}$/);
    expect(await pushed.textContent()).toContain(`Pushed ${forgeHead.slice(0, 7)} to ${branch}`);

    // Now the pull request: its link takes the form's place.
    await pullRequestForm.getByRole('button', { name: 'Open pull request' }).click();
    const link = panel.getByRole('link', { name: "Pull request #1: The agent's work" });
    await link.waitFor({ timeout: 15_000 });
    expect(github.pulls).toEqual([{ owner: 'acme', repo: 'app', title: "The agent's work", head: branch, base: 'main', body: 'Reviewed in svc.' }]);
    const url = await link.getAttribute('href');
    expect(url).toMatch(/^https:\/\/.*\/acme\/app\/pull\/1$/);
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer');
    expect(await seriousViolations(page, 'changes with a pull request')).toEqual([]);

    // The sessions list: the repository by its short name, the branch, the changes and the link.
    await page.getByRole('link', { name: 'Sessions' }).click();
    const row = page.locator('tr').filter({ hasText: workerId });
    await row.waitFor();
    const repository = row.locator('.session-repository');
    await repository.getByRole('link', { name: 'pull request #1' }).waitFor({ timeout: 10_000 });
    expect(await repository.locator(':scope > span').allTextContents()).toEqual([`app ${branch}`, '1 file +2 −0 · pull request #1']);
    expect(await repository.getByRole('link').getAttribute('href')).toBe(url);
    expect(await seriousViolations(page, 'sessions with a repository')).toEqual([]);
    await page.context().close();
  }, 90_000);

  /** What an xterm screen on the page shows, its rows as text (xterm draws blanks as no-break spaces). */
  const screenText = async (page: Page) => ((await page.locator('.xterm-rows').innerText()) ?? '').replace(/\u00a0/g, ' ');

  it("a worker's Terminal tab: looking opens nothing; Open a shell gives a shell in /workspace (ls shows the repository, its colours drawn under the CSP), kept across tabs; exit and Close say why it closed; audited; axe finds nothing serious; another person gets no terminal", async () => {
    const page = await signedIn('/sessions');
    const workerId = await startFrom(page, 'demo-repo');
    await page.locator('header .activity-idle').waitFor({ timeout: 30_000 });
    const terminalSockets: string[] = [];
    page.on('websocket', (socket) => socket.url().includes(`/workers/${workerId}/terminal`) && terminalSockets.push(socket.url()));

    await page.getByRole('tab', { name: 'Terminal' }).click();
    const panel = page.getByRole('tabpanel', { name: 'Terminal' });
    const status = panel.getByRole('status');
    await panel.getByRole('button', { name: 'Open a shell' }).waitFor();
    expect(await status.textContent()).toBe('Terminal: not open');
    expect(terminalSockets).toEqual([]);

    await panel.getByRole('button', { name: 'Open a shell' }).click();
    await status.filter({ hasText: /^Terminal: connected \(\d+×\d+\)$/ }).waitFor({ timeout: 20_000 });
    // Sized to its box when it opened: the same size in the query and in the status line.
    const [, cols, rows] = /\((\d+)×(\d+)\)/.exec((await status.textContent())!)!;
    expect(terminalSockets).toEqual([expect.stringMatching(new RegExp(`/terminal\\?cols=${cols}&rows=${rows}$`))]);
    expect(Number(cols)).toBeGreaterThan(80);
    await panel.getByRole('group', { name: 'Shell in the sandbox' }).waitFor();
    await expect.poll(() => screenText(page), { timeout: 15_000 }).toMatch(/[$#] *$/m);
    await page.keyboard.type('ls /workspace');
    await page.keyboard.press('Enter');
    await expect.poll(() => screenText(page), { timeout: 10_000 }).toMatch(/README\.md/);
    expect(await screenText(page)).toMatch(/hello\.txt/);
    expect(await screenText(page)).toMatch(/\bsrc\b/);
    // The theme's rules reach the rows although the page's CSP refuses xterm's inline <style>.
    expect(await page.locator('.xterm-rows').evaluate((element) => getComputedStyle(element).color)).toBe('rgb(230, 237, 243)');
    // Tab is the shell's; Shift+Tab leaves the terminal, back to its Close button.
    const focused = () =>
      page.evaluate(() => (document.activeElement?.classList.contains('xterm-helper-textarea') ? 'the terminal' : document.activeElement?.textContent));
    expect(await focused()).toBe('the terminal');
    await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('Close');

    // Another tab and back: the same shell, its screen as it was.
    await page.getByRole('tab', { name: 'Events' }).click();
    await page.locator('[data-event-id]').first().waitFor();
    await page.getByRole('tab', { name: 'Terminal' }).click();
    expect(await status.textContent()).toMatch(/^Terminal: connected/);
    expect(await screenText(page)).toMatch(/README\.md/);
    expect(terminalSockets).toHaveLength(1);

    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await page.setViewportSize(viewport);
      expect(await seriousViolations(page, `terminal ${viewport.width}px`)).toEqual([]);
    }

    // The shell ends: the terminal says so, keeps its screen, and offers another.
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.type('exit');
    await page.keyboard.press('Enter');
    await status.filter({ hasText: 'Terminal: closed: the shell ended (the shell exited (0))' }).waitFor({ timeout: 10_000 });
    expect(await screenText(page)).toMatch(/README\.md/);
    await panel.getByRole('button', { name: 'Open again' }).click();
    await status.filter({ hasText: /^Terminal: connected/ }).waitFor({ timeout: 20_000 });
    await panel.getByRole('button', { name: 'Close' }).click();
    await status.filter({ hasText: 'Terminal: closed: you closed it' }).waitFor({ timeout: 10_000 });
    expect(terminalSockets).toHaveLength(2);

    // Each opening is in the audit trail, as the person's (its channel reads "api": a browser cannot send X-Svc-Channel on an upgrade).
    const audit = await fetch(`${stack.url}${apiPaths.audit()}?action=terminal_opened&worker_id=${workerId}`, {
      headers: { authorization: `Bearer ${await localUserToken()}` },
    });
    const opened = ((await audit.json()) as ListResponseOf<AuditRecord>).items;
    expect(opened.map((record) => [record.action, record.worker_id, record.actor])).toEqual([
      ['terminal_opened', workerId, 'local-user'],
      ['terminal_opened', workerId, 'local-user'],
    ]);

    // Someone else: the gateway refuses their terminal as it refuses the worker (404), and the console shows them no worker.
    const someoneElse = await stack.userToken('someone-else');
    const refused = await fetch(`${stack.url}${apiPaths.terminal(workerId, { cols: 80, rows: 24 })}`, { headers: { authorization: `Bearer ${someoneElse}` } });
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { code: string }).code).toBe('worker_not_found');
    const other = await browser.newContext();
    const otherPage = await other.newPage();
    await otherPage.route('**/v1/local/token', (route) => route.fulfill({ json: { token: someoneElse, token_type: 'Bearer', expires_in: 3600 } }));
    await otherPage.goto(`${stack.url}/workers/${workerId}#code=${stack.signInCode}`);
    await otherPage.getByRole('button', { name: 'Sign in as the local user' }).click();
    await otherPage.getByRole('heading', { name: 'Not found' }).waitFor();
    expect(await otherPage.getByRole('tab', { name: 'Terminal' }).count()).toBe(0);
    await Promise.all([page.context().close(), other.close()]);
  }, 120_000);

  it('screenshots of the three pages, desktop and phone (into SVC_SCREENSHOTS_DIR: `npm run screenshots` writes docs/images/)', async () => {
    const dir = process.env['SVC_SCREENSHOTS_DIR'] ?? (await mkdtemp(path.join(tmpdir(), 'svc-screenshots-')));
    await mkdir(dir, { recursive: true });
    const written: string[] = [];
    for (const [device, viewport] of [
      ['desktop', { width: 1280, height: 800 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const page = await signedIn('/sessions', viewport);
      await startDemo(page);
      await openCard(page).waitFor({ timeout: 30_000 });
      await page.getByText('live', { exact: true }).waitFor();
      const shoot = async (name: string) => {
        const file = path.join(dir, `console-${name}-${device}.png`);
        await page.screenshot({ path: file });
        written.push(file);
      };
      await shoot('worker');
      await page.getByRole('link', { name: 'Inbox' }).click();
      await page.getByRole('article').first().waitFor({ timeout: 10_000 });
      await shoot('inbox');
      await page.getByRole('link', { name: 'Sessions' }).click();
      await page.getByRole('table').waitFor();
      await page.locator('.badge').first().waitFor({ timeout: 10_000 });
      await shoot('sessions');
      await page.context().close();
    }
    for (const file of written) {
      const png = await readFile(file);
      // A PNG of the viewport's width.
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      expect([1280, 390]).toContain(png.readUInt32BE(16));
    }
    if (!process.env['SVC_SCREENSHOTS_DIR']) await rm(dir, { recursive: true, force: true });
  }, 120_000);
});
