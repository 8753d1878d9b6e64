import type { Browser, Page } from 'playwright-core';
import { demoAgentTemplate } from '@svc/test-support/stand-ins';
import type { RunningStack } from './local-stack.js';

/** Starts a demo session from the sessions page the browser is on, returns its worker id (the demo asks to write hello.txt). */
export async function startDemo(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/\/workers\/wrk_/);
  return page.url().split('/').at(-1)!;
}

/** Starts a session of `template` from the sessions page the browser is on, returns its worker id. */
export async function startFrom(page: Page, template: string): Promise<string> {
  await page.getByLabel('Template').selectOption(template);
  return startDemo(page);
}

/**
 * The demo agent as a template for the stack's templates directory beside the built-in ones:
 * `mode`, and whether its Write is asked (else allowed by its lists). In a conversation
 * (docs/conversations.md) it answers each message after its first turn with `You said: "…"`.
 */
const demo = (description: string, mode: 'conversation' | 'one_shot', writeAsked: boolean, stepMs: number) =>
  demoAgentTemplate({ description, mode, writeAsked, stepMs });

/** The console suites' templates, by name. */
export const CONSOLE_TEMPLATES: Record<string, string> = {
  // Its first turn runs through, nobody asked; then it waits for a message.
  'demo-talk': demo('The demo agent in a conversation: it answers every message', 'conversation', false, 20),
  // The demo run once (the built-in one is a conversation): it ends after its turn.
  'demo-once': demo('The demo agent, one prompt and one run', 'one_shot', true, 100),
  // Its first turn waits for a person to decide its Write: a turn to stop.
  'demo-talk-asks': demo('The demo agent in a conversation, asking before it writes', 'conversation', true, 20),
};

/** A page of a new browser context at `path`, signed in as the stack's local user. */
export async function signedIn(browser: Browser, stack: RunningStack, path: string, viewport = { width: 1280, height: 800 }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  // As the link `npm run up` prints: the sign-in code rides in the fragment.
  await page.goto(`${stack.url}${path}#code=${stack.signInCode}`);
  await page.getByRole('button', { name: 'Sign in as the local user' }).click();
  return page;
}

/** The card of the request waiting for a decision (a closed card has no `data-approval`). */
export const openCard = (page: Page) => page.locator('article.approval[data-approval]');
