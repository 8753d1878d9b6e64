import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { crc32, deflateSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import {
  apiPaths,
  isPersonMessage,
  MESSAGE_LIMITS,
  personMessageImages,
  type AuditRecord,
  type EventData,
  type ListResponseOf,
  type PostMessageBodyType,
  type StoredEvent,
} from '@svc/protocol';
import { pngOfSize, startGitHubApi, startGitServer, type GitHubApiStandIn, type GitServer } from '@svc/test-support';
import { launchBrowser } from '@svc/test-support/browser';
import { demoAgentTemplate } from '@svc/test-support/stand-ins';
import { seriousViolations } from './axe.js';
import { startLocalStack, type RunningStack } from './local-stack.js';

/** Starts a demo session from the sessions page the browser is on, returns its worker id (the demo asks to write hello.txt). */
async function startDemo(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/\/workers\/wrk_/);
  return page.url().split('/').at(-1)!;
}

/** Starts a session of `template` from the sessions page the browser is on, returns its worker id. */
async function startFrom(page: Page, template: string): Promise<string> {
  await page.getByLabel('Template').selectOption(template);
  return startDemo(page);
}

/** A PNG of `width`×`height` pixels of one colour (8-bit RGB, no filter): a real image for the browser to decode. */
function solidPng(width: number, height: number, [red, green, blue]: [number, number, number]): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const typed = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const framed = Buffer.alloc(typed.length + 8);
    framed.writeUInt32BE(data.length, 0);
    typed.copy(framed, 4);
    framed.writeUInt32BE(crc32(typed), typed.length + 4);
    return framed;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: width }, () => [red, green, blue]).flat())]);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** How long the browser's network stays down while the agent goes on. */
const OFFLINE_MS = 5_000;

/** What a one-shot worker's page says instead of a message box. */
const ONE_SHOT_NOTE = 'This session runs its first prompt only: it takes no messages.';

/**
 * The demo agent as a template for the stack's templates directory beside the built-in ones:
 * `mode`, and whether its Write is asked (else allowed by its lists). In a conversation
 * (docs/conversations.md) it answers each message after its first turn with `You said: "…"`.
 */
const demo = (description: string, mode: 'conversation' | 'one_shot', writeAsked: boolean, stepMs: number) =>
  demoAgentTemplate({ description, mode, writeAsked, stepMs });

const TEMPLATES: Record<string, string> = {
  // Its first turn runs through, nobody asked; then it waits for a message.
  'demo-talk': demo('The demo agent in a conversation: it answers every message', 'conversation', false, 20),
  // The demo run once (the built-in one is a conversation): it ends after its turn.
  'demo-once': demo('The demo agent, one prompt and one run', 'one_shot', true, 100),
  // Its first turn waits for a person to decide its Write: a turn to stop.
  'demo-talk-asks': demo('The demo agent in a conversation, asking before it writes', 'conversation', true, 20),
};

/** The conversation demo on the forge's `acme/app` (docs/workspace.md): its Write, allowed by its lists, changes the workspace. */
const demoOnRepository = (forgeUrl: string) =>
  demoAgentTemplate({ description: 'The demo agent in a conversation, on a repository', tables: `[workspace]\nrepo = "${forgeUrl}/acme/app.git"\n` });

describe('the web console in a real Chromium, against the local stack', () => {
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
    const templates = { ...TEMPLATES, 'demo-repo': demoOnRepository(forge.url) };
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

  async function signedIn(path: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    // As the link `npm run up` prints: the sign-in code rides in the fragment.
    await page.goto(`${stack.url}${path}#code=${stack.signInCode}`);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    return page;
  }

  /** The card of the request waiting for a decision (a closed card has no `data-approval`). */
  const openCard = (page: Page) => page.locator('article.approval[data-approval]');

  it('sign in, see the demo session, allow its Write from the worker page (twice: Allow is for once), see the result', async () => {
    const page = await signedIn('/sessions');
    await page.getByRole('link', { name: stack.demoWorker }).click();
    await expect.poll(() => page.url()).toBe(`${stack.url}/workers/${stack.demoWorker}`);
    // The built-in demo is a conversation: the page has its message box.
    await page.getByRole('textbox', { name: 'Message to the agent' }).waitFor();
    for (const _ of ['the first Write', 'the same Write again']) {
      await openCard(page).waitFor({ timeout: 20_000 });
      await openCard(page).getByRole('button', { name: 'Allow', exact: true }).click();
      await openCard(page).waitFor({ state: 'detached' });
    }
    await page.locator('.row.result').waitFor({ timeout: 20_000 });
    await expect.poll(() => page.locator('.row.decision-allow').count()).toBe(2);
    expect(await page.locator('.row.decision-allow').first().textContent()).toContain('allowed by Local user');
    // The agent's text is Markdown: "Always allow" in quotes stays text, and no raw HTML gets through.
    expect(await page.locator('.row.assistant').filter({ hasText: 'If you chose "Always allow"' }).count()).toBe(1);
    await page.context().close();
  }, 60_000);

  it('"Always allow" shows the rule before saving it; the same request again is then answered by the rule, nobody asked', async () => {
    const page = await signedIn('/sessions');
    const workerId = await startDemo(page);
    // Every card that ever becomes decidable on this page, by request id.
    await page.evaluate(() => {
      const seen = new Set<string>();
      (window as unknown as { decidable: Set<string> }).decidable = seen;
      new MutationObserver(() => document.querySelectorAll('article[data-approval]').forEach((card) => seen.add(card.getAttribute('data-approval')!))).observe(
        document.body,
        { subtree: true, childList: true, attributes: true },
      );
    });
    await openCard(page).waitFor({ timeout: 30_000 });
    await openCard(page).getByRole('button', { name: 'Always allow…' }).click();
    expect(await openCard(page).textContent()).toContain('Saves a rule: always allow Write for this worker, whatever its input.');
    await openCard(page).getByRole('button', { name: 'Save rule and allow' }).click();
    await page.locator('.row.result').waitFor({ timeout: 30_000 });
    const decisions = await page.locator('.row.control[class*="decision-"]').allTextContents();
    expect(decisions).toHaveLength(2);
    expect(decisions[0]).toMatch(/^allowed by Local user \(always\)/);
    expect(decisions[1]).toMatch(/^allowed by the policy: allowed by local-user's rule Write$/);
    expect(await page.evaluate(() => [...(window as unknown as { decidable: Set<string> }).decidable])).toHaveLength(1);
    expect(page.url()).toBe(`${stack.url}/workers/${workerId}`);
    await page.context().close();
  }, 90_000);

  it('a worker that is not there, or not yours: a "not found or not yours" page, with no data', async () => {
    const page = await signedIn('/workers/wrk_nobody_here');
    await page.getByRole('heading', { name: 'Not found' }).waitFor();
    expect(await page.textContent('main')).toContain('No worker wrk_nobody_here here, or it is not yours.');
    await page.context().close();
  }, 30_000);

  it('on a phone (390×844): a second demo asks, and is allowed from the approvals inbox', async () => {
    const page = await signedIn('/sessions', { width: 390, height: 844 });
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/\/workers\/wrk_/);
    const workerId = page.url().split('/').at(-1)!;
    await page.getByRole('link', { name: 'Inbox' }).click();
    // The first of its requests (the demo asks again once allowed).
    const card = page.getByRole('listitem').filter({ hasText: workerId }).first();
    await card.waitFor({ timeout: 30_000 });
    const allow = card.getByRole('button', { name: 'Allow', exact: true });
    const box = await allow.boundingBox();
    expect(box!.height).toBeGreaterThanOrEqual(44);
    await allow.click();
    await card.getByRole('status').filter({ hasText: 'Allowed' }).waitFor();
    await page.context().close();
  }, 60_000);

  it('two browsers on one worker: a decision in one shows in the other within 1 s, its buttons disabled, saying who decided', async () => {
    const first = await signedIn('/sessions');
    const workerId = await startDemo(first);
    const second = await signedIn(`/workers/${workerId}`);
    // The first request's card (the demo asks once more after it is allowed; that card comes after).
    const cardOf = (page: Page) => page.getByRole('article').filter({ hasText: 'Write' }).first();
    await Promise.all([cardOf(first).waitFor({ timeout: 30_000 }), cardOf(second).waitFor({ timeout: 30_000 })]);
    await cardOf(first).getByRole('button', { name: 'Allow', exact: true }).click();
    const decidedAt = Date.now();
    await cardOf(second).getByText('Allowed: decided by Local user').waitFor({ timeout: 5000 });
    expect(Date.now() - decidedAt).toBeLessThanOrEqual(1000);
    expect(await cardOf(second).getByRole('button', { name: 'Allow', exact: true }).isDisabled()).toBe(true);
    await Promise.all([first.context().close(), second.context().close()]);
  }, 60_000);

  it('both browsers decide at once: one decision wins, the other is told it was already decided, and by whom', async () => {
    const first = await signedIn('/sessions');
    const workerId = await startDemo(first);
    const second = await signedIn(`/workers/${workerId}`);
    // The first request's card (the demo asks once more after it is allowed; that card comes after).
    const cardOf = (page: Page) => page.getByRole('article').filter({ hasText: 'Write' }).first();
    await Promise.all([cardOf(first).waitFor({ timeout: 30_000 }), cardOf(second).waitFor({ timeout: 30_000 })]);
    // Both decisions in flight at once: each page's POST is held until the other's is made too, so
    // neither page can learn of the other's decision (and close its card) before its own click.
    let releaseBoth!: () => void;
    const bothPosted = new Promise<void>((resolve) => (releaseBoth = resolve));
    let posted = 0;
    await Promise.all(
      [first, second].map((page) =>
        page.route(`**${apiPaths.control(workerId)}`, async (route) => {
          if (route.request().method() === 'POST') {
            if (++posted === 2) releaseBoth();
            await bothPosted;
          }
          await route.continue();
        }),
      ),
    );
    await Promise.all([first, second].map((page) => cardOf(page).getByRole('button', { name: 'Allow', exact: true }).click()));
    const outcomes = await Promise.all(
      [first, second].map(async (page) => {
        const outcome = cardOf(page).locator('.outcome');
        await outcome.waitFor({ timeout: 10_000 });
        return (await outcome.textContent()) ?? '';
      }),
    );
    const refused = outcomes.filter((text) => /was already decided \((allow|deny)\) by Local user/.test(text));
    expect(refused, outcomes.join(' | ')).toHaveLength(1);
    expect(outcomes.filter((text) => text === 'Allowed')).toHaveLength(1);
    await Promise.all([first.context().close(), second.context().close()]);
  }, 60_000);

  it("deny with a message: the agent gets it as the tool's error; the ended worker then opens read-only", async () => {
    const page = await signedIn('/sessions');
    const workerId = await startFrom(page, 'demo-once');
    // A one-shot session takes no messages: no message box, a note instead.
    await page.getByText(ONE_SHOT_NOTE).waitFor();
    expect(await page.getByRole('textbox', { name: 'Message to the agent' }).count()).toBe(0);
    const card = page.getByRole('article').filter({ hasText: 'Write' });
    await card.waitFor({ timeout: 30_000 });
    await card.getByRole('button', { name: 'Deny…' }).click();
    await card.getByLabel('Why (the agent reads this)').fill('not in this repository, please');
    await card.getByRole('button', { name: 'Deny', exact: true }).click();
    await page.locator('.row.tool-result.failed').filter({ hasText: 'not in this repository, please' }).waitFor({ timeout: 20_000 });
    expect(await page.locator('.row.decision-deny').first().textContent()).toContain('not in this repository, please');
    // The demo ends after its one request; its page is then read-only, with nothing to decide.
    await page.locator('.status-completed, .status-failed').waitFor({ timeout: 30_000 });
    const again = await page.context().newPage();
    await again.goto(`${stack.url}/workers/${workerId}#code=${stack.signInCode}`);
    await again.getByRole('button', { name: 'Sign in as the local user' }).click();
    await again.getByText('Read-only: this worker has ended; nothing can be decided.').waitFor({ timeout: 10_000 });
    expect(await again.getByRole('button', { name: 'Allow', exact: true }).count()).toBe(0);
    await page.context().close();
  }, 90_000);

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

  /** The worker's stored history, as the API lists it (its first 1,000 events). */
  async function storedEvents(workerId: string): Promise<StoredEvent[]> {
    const response = await fetch(`${stack.url}${apiPaths.sdkEvents(workerId, { limit: 1000 })}`, {
      headers: { authorization: `Bearer ${await localUserToken()}` },
    });
    return ((await response.json()) as ListResponseOf<StoredEvent>).items;
  }

  it('a conversation on a phone (390×844): it waits in the inbox; the message box is at the foot of the page; a message whose answer was lost is sent again and stored once; the agent answers each message', async () => {
    const phone = { width: 390, height: 844 };
    const page = await signedIn('/sessions', phone);
    const workerId = await startFrom(page, 'demo-talk');
    // Its first turn runs through by itself; then the agent waits for a message.
    await page.locator('header .activity-idle').waitFor({ timeout: 30_000 });

    // The sessions list shows it among those waiting, and the inbox lists it, linking to its page.
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByLabel('Show').selectOption('waiting');
    await page.locator('tr').filter({ hasText: workerId }).filter({ hasText: 'idle: waiting for a message' }).waitFor({ timeout: 10_000 });
    await page.getByRole('link', { name: 'Inbox' }).click();
    const waiting = page.getByRole('region', { name: 'Waiting for you' }).getByRole('listitem').filter({ hasText: workerId });
    await waiting.filter({ hasText: 'idle: waiting for a message' }).waitFor({ timeout: 10_000 });
    await waiting.getByRole('link', { name: workerId }).click();
    await page.waitForURL(`**/workers/${workerId}`);

    // The box sits at the foot of the screen, within a thumb's reach; its controls are at least 44 px tall.
    const box = page.getByRole('textbox', { name: 'Message to the agent' });
    const send = page.getByRole('button', { name: 'Send' });
    const stop = page.getByRole('button', { name: 'Stop the turn' });
    await box.waitFor();
    const form = (await page.getByRole('form', { name: 'Talk to the agent' }).boundingBox())!;
    expect(form.y + form.height).toBeLessThanOrEqual(phone.height);
    expect(form.y + form.height).toBeGreaterThan(phone.height - 60);
    for (const control of [box, send, stop]) expect((await control.boundingBox())!.height).toBeGreaterThanOrEqual(44);
    // The agent is idle: no turn to stop.
    expect(await stop.isDisabled()).toBe(true);

    // The first send reaches the gateway, but its answer is lost on the way back.
    const posted: Array<{ text: string; client_message_id?: string }> = [];
    await page.route(`**${apiPaths.messages(workerId)}`, async (route) => {
      posted.push(route.request().postDataJSON() as { text: string; client_message_id?: string });
      if (posted.length > 1) return route.continue();
      await route.fetch();
      await route.abort('connectionreset');
    });
    await box.fill('hello from the phone');
    await box.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Not sent: the gateway could not be reached' }).waitFor();
    expect(await box.inputValue()).toBe('hello from the phone');
    // Sent again, the same text is the same message (its client_message_id): stored once.
    await send.click();
    await expect.poll(() => box.inputValue()).toBe('');
    expect(posted.map((body) => body.client_message_id)).toEqual([posted[0]!.client_message_id, posted[0]!.client_message_id]);
    await page.locator('.row.person').filter({ hasText: 'You: hello from the phone' }).waitFor({ timeout: 10_000 });
    await page.locator('.row.assistant').filter({ hasText: 'You said: "hello from the phone"' }).waitFor({ timeout: 20_000 });

    // Shift+Enter starts a new line, sending nothing; another text is another message, with an id of its own.
    await box.fill('and again');
    await box.press('Shift+Enter');
    await box.pressSequentially('twice');
    expect(posted).toHaveLength(2);
    await send.click();
    await page.locator('.row.assistant').filter({ hasText: 'You said: "and again twice"' }).waitFor({ timeout: 20_000 });
    expect(posted[2]).toMatchObject({ text: 'and again\ntwice' });
    expect(posted[2]!.client_message_id).not.toBe(posted[0]!.client_message_id);
    // The second message is stored after any copy of the first would be: the first is there once, answered once.
    const history = await storedEvents(workerId);
    expect(history.filter((event) => isPersonMessage(event)).map((event) => (event.data as EventData<'system'>).message)).toEqual([
      'hello from the phone',
      'and again\ntwice',
    ]);
    expect(
      history.filter((event) => event.type === 'result' && (event.data as EventData<'result'>).text?.includes('You said: "hello from the phone"')),
    ).toHaveLength(1);

    // No serious or critical axe violation on the page with its message box, phone and desktop.
    for (const viewport of [phone, { width: 1280, height: 800 }]) {
      await page.setViewportSize(viewport);
      expect(await seriousViolations(page, `conversation ${viewport.width}px`)).toEqual([]);
    }
    await page.context().close();
  }, 90_000);

  it('"Stop the turn" while the agent waits for a decision: Tab goes from the text to Send to Stop; Stop posts an interrupt (202), which the history shows as the person\'s; the turn ends, its request withdrawn', async () => {
    const page = await signedIn('/sessions');
    const workerId = await startFrom(page, 'demo-talk-asks');
    await openCard(page).waitFor({ timeout: 30_000 });
    const stop = page.getByRole('button', { name: 'Stop the turn' });
    await expect.poll(() => stop.isEnabled(), { timeout: 10_000 }).toBe(true);
    await page.getByRole('textbox', { name: 'Message to the agent' }).fill('hold on');
    const focused = () => page.evaluate(() => document.activeElement?.textContent);
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Send');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Stop the turn');
    const [interrupted] = await Promise.all([
      page.waitForResponse((response) => response.url().endsWith(apiPaths.interrupt(workerId)) && response.request().method() === 'POST'),
      page.keyboard.press('Enter'),
    ]);
    expect(interrupted.status()).toBe(202);
    await page.locator('.row.person.interrupt').filter({ hasText: 'You asked to stop the turn' }).waitFor({ timeout: 10_000 });
    // The agent ends its turn: its open request is withdrawn (the card closes), the worker waits for a message.
    await openCard(page).waitFor({ state: 'detached', timeout: 10_000 });
    await page.locator('.activity-idle').waitFor({ timeout: 10_000 });
    await page.context().close();
  }, 60_000);

  it('images in a message, on a phone: attached by the picker and by paste, refused in the page beyond the limit, kept when the gateway refuses, sent with the text; the history shows them loaded', async () => {
    const phone = { width: 390, height: 844 };
    const page = await signedIn('/sessions', phone);
    const workerId = await startFrom(page, 'demo-talk');
    await page.locator('header .activity-idle').waitFor({ timeout: 30_000 });
    const form = page.getByRole('form', { name: 'Talk to the agent' });
    const box = form.getByRole('textbox', { name: 'Message to the agent' });
    const attachButton = form.getByRole('button', { name: 'Attach images' });
    const attached = form.getByRole('list', { name: 'Attached images' });
    const refusal = form.getByRole('alert');
    const posted: PostMessageBodyType[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith(apiPaths.messages(workerId))) posted.push(request.postDataJSON() as PostMessageBodyType);
    });
    const pick = async (files: Array<{ name: string; mimeType: string; buffer: Buffer }>) => {
      const [chooser] = await Promise.all([page.waitForEvent('filechooser'), attachButton.click()]);
      expect(chooser.isMultiple()).toBe(true);
      await chooser.setFiles(files);
    };
    // The picker's button is in reach of a thumb, at the foot of the screen, as tall as the others.
    const buttonBox = (await attachButton.boundingBox())!;
    expect(buttonBox.height).toBeGreaterThanOrEqual(44);
    expect(buttonBox.y + buttonBox.height).toBeGreaterThan(phone.height - 80);

    // Too large, and not an image: refused in the page, each by name; nothing attached, nothing sent.
    await pick([
      { name: 'huge.png', mimeType: 'image/png', buffer: pngOfSize(MESSAGE_LIMITS.imageBytes + 1) },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') },
    ]);
    await refusal
      .filter({ hasText: 'Not attached: huge.png is 3.1 MiB; an image may be at most 3 MiB; notes.txt is not a PNG, JPEG, GIF, or WebP image' })
      .waitFor();
    expect(await attached.count()).toBe(0);

    // One by the picker, one pasted (a screenshot on the clipboard), one picked and taken off again.
    const red = solidPng(12, 8, [220, 30, 30]);
    const blue = solidPng(10, 6, [30, 30, 220]);
    await pick([{ name: 'red.png', mimeType: 'image/png', buffer: red }]);
    const thumbnail = attached.getByRole('img', { name: 'Image 1: red.png' });
    await expect.poll(() => thumbnail.evaluate((image: HTMLImageElement) => (image.complete ? image.naturalWidth : 0)).catch(() => 0)).toBe(12);
    await box.evaluate((textarea, base64) => {
      const clipboard = new DataTransfer();
      clipboard.items.add(new File([Uint8Array.from(atob(base64), (character) => character.charCodeAt(0))], 'image.png', { type: 'image/png' }));
      textarea.dispatchEvent(new ClipboardEvent('paste', { clipboardData: clipboard, bubbles: true, cancelable: true }));
    }, blue.toString('base64'));
    await attached.getByRole('img', { name: 'Image 2: image.png' }).waitFor();
    await pick([{ name: 'extra.png', mimeType: 'image/png', buffer: red }]);
    await form.getByRole('button', { name: 'Remove image 3 (extra.png)' }).click();
    await expect.poll(() => attached.getByRole('listitem').count()).toBe(2);
    expect(posted).toHaveLength(0);

    // The gateway refuses the first send: its words are shown, the text and the images stay.
    await page.route(
      `**${apiPaths.messages(workerId)}`,
      (route) => route.fulfill({ status: 400, json: { code: 'invalid_request', message: '/body/images/1/data is not image/png' } }),
      { times: 1 },
    );
    await box.fill('what do you see?');
    await box.press('Enter');
    await refusal.filter({ hasText: 'Not sent: /body/images/1/data is not image/png' }).waitFor();
    expect(await box.inputValue()).toBe('what do you see?');
    expect(await attached.getByRole('listitem').count()).toBe(2);

    // Sent again: the same message (its id), the images base64 in the order attached; the box empties.
    await form.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => box.inputValue()).toBe('');
    expect(await attached.count()).toBe(0);
    expect(posted).toHaveLength(2);
    expect(posted[1]).toEqual({
      text: 'what do you see?',
      images: [
        { media_type: 'image/png', data: red.toString('base64') },
        { media_type: 'image/png', data: blue.toString('base64') },
      ],
      client_message_id: posted[0]!.client_message_id,
    });

    // The history names the images; the page reads each with the token and shows it decoded.
    const row = page.locator('.row.person').filter({ hasText: 'You: what do you see?' });
    await row.waitFor({ timeout: 30_000 });
    const shownWidth = (number: number) =>
      row
        .getByRole('button', { name: new RegExp(`^Image ${number}, PNG`) })
        .locator('img')
        .evaluate((image: HTMLImageElement) => (image.complete ? image.naturalWidth : 0))
        .catch(() => 0);
    await expect.poll(() => shownWidth(1), { timeout: 10_000 }).toBe(12);
    await expect.poll(() => shownWidth(2), { timeout: 10_000 }).toBe(10);
    expect(await row.locator('img').first().getAttribute('src')).toMatch(/^blob:/);
    const larger = row.getByRole('button', { name: /^Image 1, PNG, .*: show larger$/ });
    await larger.click();
    await row.getByRole('button', { name: /^Image 1, PNG, .*: show smaller$/ }).waitFor();
    const stored = (await storedEvents(workerId)).find((event) => isPersonMessage(event) && (event.data as EventData<'system'>).message === 'what do you see?');
    expect(personMessageImages(stored as StoredEvent<'system'>).map((image) => image.bytes)).toEqual([red.length, blue.length]);

    // The agent got the message (its images beside the text): the demo answers the text.
    await page.locator('.row.assistant').filter({ hasText: 'You said: "what do you see?"' }).waitFor({ timeout: 20_000 });

    // No serious or critical axe violation with images attached and in the history, phone and desktop.
    await pick([{ name: 'red.png', mimeType: 'image/png', buffer: red }]);
    await attached.getByRole('img', { name: 'Image 1: red.png' }).waitFor();
    for (const viewport of [phone, { width: 1280, height: 800 }]) {
      await page.setViewportSize(viewport);
      expect(await seriousViolations(page, `images ${viewport.width}px`)).toEqual([]);
    }

    // An image the control plane no longer keeps (older than kept): the history says so in its place.
    await page.route('**/messages/images/*', (route) => route.fulfill({ status: 404, json: { code: 'image_not_found', message: 'no image kept' } }));
    await page.getByRole('tab', { name: 'Sandbox logs' }).click();
    await page.getByRole('tab', { name: 'Events' }).click();
    await row.getByText(/^Image 1, PNG, .*: image no longer kept$/).waitFor({ timeout: 10_000 });
    expect(await row.locator('img').count()).toBe(0);
    await page.context().close();
  }, 90_000);

  it("the sandbox logs tab follows the worker's sandbox output over the logs WebSocket", async () => {
    const page = await signedIn('/sessions');
    await startDemo(page);
    await page.getByRole('tab', { name: 'Sandbox logs' }).click();
    await page.getByText('Sandbox logs: following').waitFor({ timeout: 10_000 });
    await expect.poll(async () => (await page.locator('pre[aria-label="Sandbox logs"]').textContent()) ?? '', { timeout: 10_000 }).toMatch(/svc-sidecar|agent/);
    await page.getByRole('tab', { name: 'Events' }).click();
    await page.locator('[data-event-id]').first().waitFor();
    await page.context().close();
  }, 60_000);

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

  it('axe finds no serious or critical violation on the sessions page, a worker page (with an open approval) and the inbox, desktop and phone', async () => {
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const page = await signedIn('/sessions', viewport);
      await page.getByRole('table').or(page.getByText('No sessions')).first().waitFor();
      const pages: Array<[string, () => Promise<void>]> = [
        ['sessions', async () => {}],
        [
          'worker',
          async () => {
            await startDemo(page);
            await page.getByRole('article').filter({ hasText: 'Write' }).waitFor({ timeout: 30_000 });
          },
        ],
        [
          'inbox',
          async () => {
            await page.getByRole('link', { name: 'Inbox' }).click();
            await page.getByRole('heading', { name: 'Inbox' }).waitFor();
            await page.getByRole('article').first().waitFor({ timeout: 10_000 });
          },
        ],
      ];
      for (const [name, open] of pages) {
        await open();
        expect(await seriousViolations(page, `${name} ${viewport.width}px`)).toEqual([]);
      }
      await page.context().close();
    }
  }, 120_000);
});
