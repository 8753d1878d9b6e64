import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { apiPaths, type ApprovalItem, type ListResponseOf, type Session, type StoredEvent, type Worker } from '@svc/protocol';
import { launchBrowser } from '@svc/test-support/browser';
import { seriousViolations } from '../axe.js';
import { startLocalStack, type RunningStack } from '../local-stack.js';
import { demoAgentTemplate } from '@svc/test-support/stand-ins';

/**
 * The demo agent (it asks to write hello.txt, and once allowed asks the same again) with approval
 * routes (docs/teams.md): `routes` is TOML appended after its tables.
 */
const demo = (description: string, routes: string, writeAsked = true) => demoAgentTemplate({ description, writeAsked, tables: routes });

const TEMPLATES: Record<string, string> = {
  // Its Write goes to bob, not to its owner.
  'demo-routed': demo('The demo agent, its Write routed to bob', '[[approvals.route]]\nmatch = "Write"\nto = ["user:bob"]\n'),
  // Its Write needs bob and dave both.
  'demo-quorum': demo('The demo agent, its Write needing two', '[[approvals.route]]\nmatch = "Write"\nto = ["user:bob", "user:dave"]\nquorum = 2\n'),
  // Nobody is asked: a session to share.
  'demo-talk': demo('The demo agent in a conversation', '', false),
};

/** The stack's other people (docs/teams.md, "The built-in issuer"): carol owns the sessions, bob (of group release) and dave decide. */
const LOCAL_USERS = { bob: { groups: ['release'] }, carol: {}, dave: {} };

describe('teams in the web console: routed requests, votes, bulk decisions, the access list', () => {
  let stack: RunningStack;
  let browser: Browser;
  beforeAll(async () => {
    [stack, browser] = await Promise.all([startLocalStack({ SVC_LOCAL_USERS: JSON.stringify(LOCAL_USERS) }, TEMPLATES), launchBrowser()]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 60_000);

  /** A page signed in as `user` with the sign-in page's User field (the stack's sign-in code in the link, as `npm run up` prints it). */
  async function signedInAs(user: string, at: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
    const page = await (await browser.newContext({ viewport })).newPage();
    await page.goto(`${stack.url}${at}#code=${stack.signInCode}`);
    await page.getByLabel(/^User/).fill(user);
    await page.getByRole('button', { name: `Sign in as ${user}` }).click();
    return page;
  }

  /** `user`'s token, as the sign-in page gets it (`POST /v1/local/token` with the code and the user). */
  const tokenOf = (user: string) => stack.signInToken(user);

  /** A call to the API as `user`: its status and body. */
  async function call<T>(user: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const response = await fetch(`${stack.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${await tokenOf(user)}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as T };
  }

  /** Starts a session of `template` as `user` through the API; its worker's id. */
  async function startAs(user: string, template: string): Promise<string> {
    const started = await call<Session>(user, 'POST', apiPaths.sessions(), { template });
    expect(started.status).toBe(201);
    return started.body.worker_id;
  }

  /** `user`'s inbox entry for `workerId`'s first open request, once there is one. */
  async function openItem(user: string, workerId: string): Promise<ApprovalItem> {
    let found: ApprovalItem | undefined;
    await expect
      .poll(
        async () => {
          found = (await call<ListResponseOf<ApprovalItem>>(user, 'GET', apiPaths.approvals)).body.items.find((item) => item.worker_id === workerId);
          return found !== undefined;
        },
        { timeout: 60_000, interval: 250 },
      )
      .toBe(true);
    return found!;
  }

  /** The decisions stored on `workerId`, oldest first: who decided and how. */
  async function decisions(workerId: string): Promise<Array<StoredEvent<'control_response'>>> {
    const listed = await call<ListResponseOf<StoredEvent<'control_response'>>>(
      'carol',
      'GET',
      apiPaths.sdkEvents(workerId, { types: 'control_response', limit: 100 }),
    );
    return listed.body.items;
  }

  /** The inbox's item of `workerId` (its first request). */
  const itemOf = (page: Page, workerId: string) => page.getByRole('listitem').filter({ hasText: workerId }).first();

  it('a routed request: its owner is told in the card who may decide it (403 not_a_decider); bob, whom the route names, sees its rule in his inbox and allows it', async () => {
    const carol = await signedInAs('carol', '/sessions');
    await carol.getByLabel('Template').selectOption('demo-routed');
    await carol.getByRole('button', { name: 'Start session' }).click();
    await carol.waitForURL(/\/workers\/wrk_/);
    const workerId = carol.url().split('/').at(-1)!;

    // The owner's card says where the request goes; her Allow is refused in place, in the control service's words.
    const card = carol.locator('article.approval[data-approval]');
    await card.waitFor({ timeout: 30_000 });
    expect(await card.locator('.route').textContent()).toBe('Routed to user:bob by the rule Write');
    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    const refusal = carol.locator('article.approval').getByRole('alert');
    await refusal.waitFor({ timeout: 10_000 });
    expect(await refusal.textContent()).toMatch(
      /^Not yours to decide: request \S+ is routed to user:bob by the rule Write: only they \(and admins\) may decide it/,
    );
    expect(await carol.locator('article.approval').first().getByRole('button', { name: 'Allow', exact: true }).isDisabled()).toBe(true);
    expect(await seriousViolations(carol, 'a refused card')).toEqual([]);

    // Bob's inbox lists it, with its rule and who may decide it; he allows it.
    const bob = await signedInAs('bob', '/inbox');
    const item = itemOf(bob, workerId);
    await item.waitFor({ timeout: 15_000 });
    expect(await item.locator('.route').textContent()).toBe('Routed to user:bob by the rule Write');
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await bob.setViewportSize(viewport);
      expect(await seriousViolations(bob, `an inbox with a routed request ${viewport.width}px`)).toEqual([]);
    }
    await item.getByRole('button', { name: 'Allow', exact: true }).click();
    await item
      .getByRole('status')
      .filter({ hasText: /^Allowed$/ })
      .waitFor({ timeout: 10_000 });

    // The owner's page shows it decided by bob; the store has bob's decision.
    await carol.locator('article.approval').first().getByText('Allowed: decided by bob').waitFor({ timeout: 10_000 });
    const [first] = await decisions(workerId);
    expect(first!.data).toMatchObject({ decision: 'allow', decided_by: 'bob' });
    await Promise.all([carol.context().close(), bob.context().close()]);
  }, 120_000);

  it('a quorum of two: bob\'s allow is a vote ("Your vote is counted: 1 of 2"), the card stays open and the inbox counts it; dave\'s allow decides it', async () => {
    const workerId = await startAs('carol', 'demo-quorum');
    await openItem('bob', workerId);
    const bob = await signedInAs('bob', '/inbox');
    const item = itemOf(bob, workerId);
    await item.waitFor({ timeout: 15_000 });
    expect(await item.locator('.route').textContent()).toBe('Routed to user:bob, user:dave by the rule Write · 0 of 2 allowed');
    // A vote cannot give "always": the card does not offer it.
    expect(await item.getByRole('button', { name: 'Always allow…' }).count()).toBe(0);

    await item.getByRole('button', { name: 'Allow', exact: true }).click();
    await item.getByRole('status').filter({ hasText: 'Your vote is counted: 1 of 2.' }).waitFor({ timeout: 10_000 });
    // Still open: decidable (his allow counted once, a deny still his to give), and counted in the list.
    await item.locator('.route').filter({ hasText: '1 of 2 allowed: bob' }).waitFor({ timeout: 10_000 });
    expect(await item.locator('article.approval[data-approval]').count()).toBe(1);
    expect(await item.getByRole('button', { name: 'Allow', exact: true }).isDisabled()).toBe(true);
    expect(await item.getByRole('button', { name: 'Deny…' }).isEnabled()).toBe(true);
    expect(await decisions(workerId)).toEqual([]);
    expect(await seriousViolations(bob, 'a vote counted')).toEqual([]);

    // Dave's allow completes the quorum: the decision is stored, and the request leaves bob's inbox.
    const { request } = await openItem('dave', workerId);
    const decided = await call<StoredEvent<'control_response'>>('dave', 'POST', apiPaths.control(workerId), {
      request_id: request.data.request_id,
      decision: 'allow',
    });
    expect(decided.status).toBe(201);
    expect(decided.body.data.message).toBe('allowed by bob and dave (a quorum of 2)');
    await bob
      .locator('article.approval')
      .filter({ has: bob.getByText('Your vote is counted') })
      .waitFor({ state: 'detached', timeout: 10_000 });
    await bob.context().close();
  }, 120_000);

  it('bulk decisions: bob selects requests of three workers (by click and by the keyboard) and allows them at once; each is its own decision, said on its card', async () => {
    // One at a time, each asking before the next starts: three sandboxes spawned at once on a loaded machine ask late.
    const asking = async (template: string) => {
      const workerId = await startAs('carol', template);
      await openItem('bob', workerId);
      return workerId;
    };
    const routed = [await asking('demo-routed'), await asking('demo-routed')];
    const quorum = await asking('demo-quorum');
    const bob = await signedInAs('bob', '/inbox', { width: 390, height: 844 });
    for (const workerId of [...routed, quorum]) await itemOf(bob, workerId).waitFor({ timeout: 15_000 });
    const bar = bob.getByRole('group', { name: 'Decide the selected requests' });
    expect(await bar.getByRole('button', { name: 'Allow selected (0)' }).isDisabled()).toBe(true);

    // The first by a click, the others by the keyboard: Tab to the checkbox, Space.
    await itemOf(bob, routed[0]!).getByRole('checkbox').click();
    for (const workerId of [routed[1]!, quorum]) {
      await itemOf(bob, workerId).getByRole('checkbox').focus();
      await bob.keyboard.press('Space');
    }
    expect(await bar.getByRole('checkbox', { name: 'Select all' }).evaluate((box: HTMLInputElement) => box.indeterminate || box.checked)).toBe(true);
    const posts: string[] = [];
    bob.on('request', (request) => request.method() === 'POST' && request.url().endsWith('/control') && posts.push(request.url()));
    await bar.getByRole('button', { name: 'Allow selected (3)' }).click();
    await bar.getByRole('status').filter({ hasText: 'Allow for 3 requests: 2 allowed, 1 vote counted.' }).waitFor({ timeout: 15_000 });

    // One POST per request; each card says how its own ended, and stays on the page.
    expect(posts.sort()).toEqual([...routed, quorum].map((workerId) => `${stack.url}${apiPaths.control(workerId)}`).sort());
    for (const workerId of routed)
      await itemOf(bob, workerId)
        .getByRole('status')
        .filter({ hasText: /^Allowed$/ })
        .waitFor();
    await itemOf(bob, quorum).getByRole('status').filter({ hasText: 'Your vote is counted: 1 of 2.' }).waitFor();
    await bob.waitForTimeout(2500);
    for (const workerId of routed)
      expect(
        await itemOf(bob, workerId)
          .getByRole('status')
          .filter({ hasText: /^Allowed$/ })
          .count(),
      ).toBe(1);
    for (const workerId of routed) expect((await decisions(workerId))[0]!.data).toMatchObject({ decision: 'allow', decided_by: 'bob' });
    expect(await decisions(quorum)).toEqual([]);
    expect(await seriousViolations(bob, 'bulk results 390px')).toEqual([]);
    await bob.context().close();
  }, 120_000);

  it('the Access tab: the owner adds and removes entries (saved with PUT …/access, as the API then shows); someone the list names reads it, unable to change it; axe finds nothing serious', async () => {
    const workerId = await startAs('carol', 'demo-talk');
    const sessionId = (await call<Worker>('carol', 'GET', apiPaths.worker(workerId))).body.session_id!;
    const accessOf = async () => (await call<Session>('carol', 'GET', apiPaths.session(sessionId))).body.access ?? [];
    const carol = await signedInAs('carol', `/workers/${workerId}`);
    await carol.getByRole('tab', { name: 'Access' }).click();
    const panel = carol.getByRole('tabpanel', { name: 'Access' });
    await panel.getByText('Nobody else.').waitFor();
    const form = panel.getByRole('form', { name: 'Add someone' });

    await form.getByLabel('Their user id').fill('erin');
    await form.getByLabel('Role').selectOption('operator');
    await form.getByRole('button', { name: 'Add' }).click();
    await panel.getByRole('status').filter({ hasText: 'Saved: user:erin is an operator.' }).waitFor({ timeout: 10_000 });
    await form.getByLabel('A person or a group').selectOption('group');
    await form.getByLabel('The group’s name').fill('release');
    await form.getByLabel('Role').selectOption('viewer');
    await form.getByRole('button', { name: 'Add' }).click();
    await panel.getByRole('status').filter({ hasText: 'Saved: group:release is a viewer.' }).waitFor({ timeout: 10_000 });
    expect(await accessOf()).toEqual([
      { principal: 'user:erin', role: 'operator' },
      { principal: 'group:release', role: 'viewer' },
    ]);
    expect(await panel.locator('tbody tr').allTextContents()).toEqual([
      expect.stringMatching(/^user:erinoperator \(also messages/),
      expect.stringMatching(/^group:releaseviewer \(sees/),
    ]);
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      await carol.setViewportSize(viewport);
      expect(await seriousViolations(carol, `the access tab ${viewport.width}px`)).toEqual([]);
    }

    await panel.getByRole('button', { name: 'Remove user:erin' }).click();
    await panel.getByRole('status').filter({ hasText: 'Saved: user:erin removed.' }).waitFor({ timeout: 10_000 });
    expect(await accessOf()).toEqual([{ principal: 'group:release', role: 'viewer' }]);
    await expect.poll(() => panel.locator('tbody tr').count()).toBe(1);

    // Bob, a viewer by his group, sees the list and no way to change it.
    const bob = await signedInAs('bob', `/workers/${workerId}`);
    await bob.getByRole('tab', { name: 'Access' }).click();
    const bobsPanel = bob.getByRole('tabpanel', { name: 'Access' });
    await bobsPanel.getByText("Only the session's owner and admins change this list.").waitFor({ timeout: 10_000 });
    expect(await bobsPanel.locator('tbody tr').allTextContents()).toEqual([expect.stringMatching(/^group:releaseviewer/)]);
    expect(await bobsPanel.getByRole('button').count()).toBe(0);
    expect(await seriousViolations(bob, 'the access tab, read-only')).toEqual([]);
    // The gateway agrees: a viewer may not change the list.
    const refused = await call<{ code: string }>('bob', 'PUT', apiPaths.sessionAccess(sessionId), { access: [] });
    expect([refused.status, refused.body.code]).toEqual([403, 'role_required']);
    await Promise.all([carol.context().close(), bob.context().close()]);
  }, 120_000);
});
