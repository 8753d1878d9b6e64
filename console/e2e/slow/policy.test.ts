import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { apiPaths, type ListResponseOf, type PermissionRule, type PolicyReplay, type PolicySuggestion, type Session, type StoredEvent } from '@svc/protocol';
import { launchBrowser } from '@svc/test-support/browser';
import { demoAgentTemplate } from '@svc/test-support/stand-ins';
import { seriousViolations } from '../axe.js';
import { startLocalStack, type RunningStack } from '../local-stack.js';

/** The demo agent in a conversation, its Write asked: it asks to write hello.txt, and once allowed asks the same again. */
const demo = (description: string) => demoAgentTemplate({ description, writeAsked: true });

const TEMPLATES: Record<string, string> = {
  // Suggestions and replay read its decisions.
  'demo-asks': demo('The demo agent, asking before it writes'),
  // A rule given "always" for the template: kept apart, so it answers none of demo-asks's requests.
  'demo-rules': demo('The demo agent, for a template rule'),
};

/** The rule the suggestions propose for the demo's Write: its exact request (the tool and its file). */
const WRITE_RULE = 'Write(/workspace/hello.txt)';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

describe('the policy page: suggestions from decisions, a candidate replayed, rules revoked', () => {
  let stack: RunningStack;
  let browser: Browser;
  let token: string;
  beforeAll(async () => {
    [stack, browser] = await Promise.all([startLocalStack({}, TEMPLATES), launchBrowser()]);
    token = await stack.signInToken();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 60_000);

  /** A call to the API as the local user: its status and body. */
  async function call<T>(method: string, at: string, body?: unknown): Promise<{ status: number; body: T }> {
    const response = await fetch(`${stack.url}${at}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as T };
  }

  async function start(template: string): Promise<string> {
    const started = await call<Session>('POST', apiPaths.sessions(), { template });
    expect(started.status).toBe(201);
    return started.body.worker_id;
  }

  /** The requests this test decided, by id: an open list read just after a decision may still name it. */
  const decidedIds = new Set<string>();

  /** Decides `workerId`'s next open request (one not decided yet) as the local user; the stored decision. */
  async function decideNext(workerId: string, decision: Record<string, unknown>): Promise<StoredEvent<'control_response'>> {
    let requestId: string | undefined;
    await expect
      .poll(
        async () => {
          const open = await call<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(workerId, { state: 'open' }));
          requestId = open.body.items.map((item) => item.data.request_id).find((id) => !decidedIds.has(id));
          return requestId !== undefined;
        },
        { timeout: 30_000, interval: 200 },
      )
      .toBe(true);
    const decided = await call<StoredEvent<'control_response'>>('POST', apiPaths.control(workerId), { request_id: requestId, ...decision });
    expect(decided.status).toBe(201);
    decidedIds.add(requestId!);
    return decided.body;
  }

  async function signedIn(at: string, viewport = DESKTOP): Promise<Page> {
    const page = await (await browser.newContext({ viewport })).newPage();
    await page.goto(`${stack.url}${at}#code=${stack.signInCode}`);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    return page;
  }

  /** The counts the page shows for the last replay, by their API names. */
  const countsShown = (page: Page) =>
    page
      .locator('.replay-counts [data-count]')
      .evaluateAll((cells) =>
        Object.fromEntries(cells.map((cell) => [cell.getAttribute('data-count'), Number.parseInt(cell.querySelector('dd')!.textContent!, 10)])),
      );

  /** What replaying a candidate that allows every Write must count, from the people's decisions on them (all on the one Write). */
  const expectedCounts = (decisions: ReadonlyArray<'allow' | 'deny'>): PolicyReplay['counts'] => ({
    requests: decisions.length,
    decided_by_people: decisions.length,
    agreements: decisions.filter((one) => one === 'allow').length,
    let_through_denied: decisions.filter((one) => one === 'deny').length,
    blocked_allowed: 0,
    questions_spared: decisions.length,
    still_asked: 0,
  });

  it('a suggestion from four allows shows with its evidence; added to the candidate and replayed, the counts are the decisions’; a deny later is let through, stressed, and the only disagreement', async () => {
    const decisions: Array<'allow' | 'deny'> = [];
    for (const _ of ['first', 'second']) {
      const workerId = await start('demo-asks');
      // Allow is for once: the demo asks the same Write again.
      for (const __ of ['the Write', 'the same Write again']) {
        await decideNext(workerId, { decision: 'allow' });
        decisions.push('allow');
      }
    }
    const page = await signedIn('/policy?template=demo-asks');
    await page.getByRole('heading', { name: 'Policy', level: 1 }).waitFor();
    expect(await page.title()).toBe('Policy · svc');
    expect(await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Policy' }).getAttribute('aria-current')).toBe('page');

    // Four decisions are fewer than the default five: no suggestion until the page asks for three.
    await page.getByText('No suggestion for demo-asks').waitFor({ timeout: 15_000 });
    await page.getByLabel('Fewest decisions behind a suggestion').fill('3');
    const row = page.locator('table.suggestions tbody tr');
    await row.waitFor({ timeout: 15_000 });
    expect(await row.count()).toBe(1);
    const api = await call<ListResponseOf<PolicySuggestion>>('GET', apiPaths.policySuggestions({ template: 'demo-asks', min_evidence: 3 }));
    expect(api.body.items).toEqual([expect.objectContaining({ rule: WRITE_RULE, list: 'auto_approve' })]);
    const { deciders } = api.body.items[0]!.evidence;
    expect(await row.locator('td').nth(0).textContent()).toBe(WRITE_RULE);
    expect(await row.locator('td').nth(1).textContent()).toBe('auto_approve');
    expect(await row.locator('td.evidence').textContent()).toContain(`4 decisions: 4 allowed, 0 denied1 input · by ${deciders.join(', ')} · last`);
    expect(page.url()).toBe(`${stack.url}/policy?template=demo-asks&min_evidence=3`);

    // Added with the keyboard: the rule is the candidate's auto_approve.
    await row.getByRole('button', { name: `Add to auto_approve: ${WRITE_RULE}` }).focus();
    await page.keyboard.press('Enter');
    await page
      .getByRole('status')
      .filter({ hasText: `Added ${WRITE_RULE} to the candidate's auto_approve.` })
      .waitFor();
    expect(await page.getByLabel(/^auto_approve/).inputValue()).toBe(WRITE_RULE);

    const replayed = async () => {
      await page.getByRole('button', { name: 'Replay over the last 200 requests' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Replayed ${decisions.length} requests:` })
        .waitFor({ timeout: 15_000 });
      // The page's counts are the API's for the same candidate.
      const fromApi = await call<PolicyReplay>('POST', apiPaths.policyReplay, { template: 'demo-asks', policy: { auto_approve: [WRITE_RULE] }, last: 200 });
      expect(fromApi.body.counts).toEqual(expectedCounts(decisions));
      return countsShown(page);
    };
    expect(await replayed()).toEqual(expectedCounts(decisions));
    expect(await page.locator('.replay-counts .stressed').count()).toBe(0);
    expect(await page.locator('table.replay-items tbody tr').count()).toBe(4);

    // A person denies the same Write on a third session: the candidate would have let it through.
    const deniedOn = await start('demo-asks');
    const denial = await decideNext(deniedOn, { decision: 'deny', message: 'not this time' });
    decisions.push('deny');
    expect(await replayed()).toEqual(expectedCounts(decisions));
    const stressed = page.locator('.replay-counts .stressed');
    expect(await stressed.textContent()).toBe('Let through what a person denied1 — a person denied it: look before adopting');
    await page.getByRole('checkbox', { name: /^Only where it decides otherwise than people did \(1\)/ }).check();
    const disagreements = page.locator('table.replay-items tbody tr');
    await expect.poll(() => disagreements.count()).toBe(1);
    expect(await disagreements.textContent()).toContain(deniedOn);
    expect(await disagreements.locator('td').nth(1).textContent()).toBe(`would allow (otherwise than the person)auto-approved by the rule ${WRITE_RULE}`);
    expect(await disagreements.locator('td').nth(2).textContent()).toBe(`denied by ${denial.data.decided_by}`);

    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      expect(await seriousViolations(page, `the policy page with a replay ${viewport.width}px`)).toEqual([]);
    }
    await page.context().close();
  }, 180_000);

  it('a rule given "always" for a template is listed under Rules, searchable, with who, when and its scope; Revoke says so in place and the API no longer lists it', async () => {
    const workerId = await start('demo-rules');
    await decideNext(workerId, { decision: 'allow', scope: 'always', rule_scope: 'template' });
    const listed = await call<ListResponseOf<PermissionRule>>('GET', apiPaths.rules({ scope: 'template' }));
    const rule = listed.body.items.find((one) => one.worker_id === workerId);
    expect(rule).toMatchObject({ tool_name: 'Write', decision: 'allow', scope: 'template', scope_key: 'template:demo-rules' });

    const page = await signedIn('/policy');
    // The Rules tab, by the keyboard (the tabs pattern: the arrow keys move between tabs).
    await page.getByRole('tab', { name: 'Suggestions and replay' }).focus();
    await page.keyboard.press('ArrowRight');
    const panel = page.getByRole('tabpanel', { name: 'Rules' });
    await panel.getByRole('searchbox', { name: /^Search/ }).fill('demo-rules');
    await panel.getByRole('combobox', { name: /^Scope/ }).selectOption('template');
    const row = panel.locator(`tr[data-rule="${rule!.rule_id}"]`);
    await row.waitFor({ timeout: 10_000 });
    await expect.poll(() => panel.locator('tbody tr').count()).toBe(1);
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 4)).toEqual([
      'always allow Write whatever its input',
      'template template:demo-rules',
      expect.stringMatching(new RegExp(`^${rule!.added_by} \\d+ (s|min) ago$`)),
      workerId,
    ]);
    expect(new URL(page.url()).searchParams.get('tab')).toBe('rules');
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      expect(await seriousViolations(page, `the rules tab ${viewport.width}px`)).toEqual([]);
    }

    await row.getByRole('button', { name: 'Revoke Write' }).focus();
    await page.keyboard.press('Enter');
    await row.getByRole('status').filter({ hasText: 'Revoked: no request is answered by it any more.' }).waitFor({ timeout: 10_000 });
    expect(await row.getByRole('button', { name: 'Revoke Write' }).isDisabled()).toBe(true);
    const after = await call<ListResponseOf<PermissionRule>>('GET', apiPaths.rules());
    expect(after.body.items.map((one) => one.rule_id)).not.toContain(rule!.rule_id);
    await panel.getByRole('button', { name: 'Read again' }).click();
    await panel.getByText('No rule you may see matches.').waitFor({ timeout: 10_000 });
    await page.context().close();
  }, 120_000);
});
