import { mkdtemp, rm, writeFile } from 'node:fs/promises';
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
  type EventData,
  type ListResponseOf,
  type PostMessageBodyType,
  type StoredEvent,
} from '@svc/protocol';
import { pngOfSize } from '@svc/test-support';
import { launchBrowser } from '@svc/test-support/browser';
import { seriousViolations } from './axe.js';
import { CONSOLE_TEMPLATES, openCard, signedIn as signIn, startDemo, startFrom } from './console-pages.js';
import { startLocalStack, type RunningStack } from './local-stack.js';

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

/** What a one-shot worker's page says instead of a message box. */
const ONE_SHOT_NOTE = 'This session runs its first prompt only: it takes no messages.';

describe('the web console in a real Chromium, against the local stack', () => {
  let stack: RunningStack;
  let browser: Browser;
  let templatesDir: string;
  beforeAll(async () => {
    templatesDir = await mkdtemp(path.join(tmpdir(), 'svc-console-templates-'));
    for (const [name, text] of Object.entries(CONSOLE_TEMPLATES)) await writeFile(path.join(templatesDir, `${name}.toml`), text);
    [stack, browser] = await Promise.all([startLocalStack({ SVC_TEMPLATES_DIR: templatesDir }), launchBrowser()]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    if (templatesDir) await rm(templatesDir, { recursive: true, force: true });
  }, 60_000);

  const signedIn = (path: string, viewport?: { width: number; height: number }) => signIn(browser, stack, path, viewport);

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

  /** A token of the local user, as the CLI gets one (for the stack's sign-in code). */
  async function localUserToken(): Promise<string> {
    const response = await fetch(`${stack.url}/v1/local/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: stack.signInCode }),
    });
    return ((await response.json()) as { token: string }).token;
  }

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
