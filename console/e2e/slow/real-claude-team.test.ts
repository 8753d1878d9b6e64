import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { apiPaths, type Session } from '@svc/protocol';
import { launchBrowser } from '@svc/test-support/browser';
import { claudeBinary, CLAUDE_CODE_VERSIONS, sandboxEnvFor } from '@svc/test-support/real-agents';
import { startMockAnthropic, type MockAnthropic } from '@svc/test-support/stand-ins';
import { seriousViolations } from '../axe.js';
import { startLocalStack, type RunningStack } from '../local-stack.js';

const CLAUDE_VERSION = CLAUDE_CODE_VERSIONS.at(-1)!;
/** The stack's people besides its local user (SVC_LOCAL_USERS): the issuer signs them in with their groups. */
const PEOPLE = { alice: { groups: ['payments'] }, bob: { groups: ['payments', 'release'] }, carol: {} };

/**
 * Issue 38's first acceptance line, in the local stack with real Claude Code (its model a
 * stand-in): the built-in issuer mints alice (payments), bob (payments, release) and carol (no
 * group); alice's session shares `group:payments` as approvers; bob watches it in Chromium and
 * decides its request; carol gets 404 on every route — REST, the WebSocket stream, the decision
 * and the console's worker page.
 */
describe(`a shared session of real Claude Code ${CLAUDE_VERSION}: a teammate decides, an outsider sees nothing (Chromium)`, () => {
  let stack: RunningStack;
  let browser: Browser;
  let anthropic: MockAnthropic;
  let templates: string;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    anthropic = await startMockAnthropic([
      { text: 'I will run the tests.', tool: { name: 'Bash', input: { command: "printf 'tests pass\\n' > tests-ran.txt", description: 'Run the tests' } } },
      { text: 'The tests pass.' },
    ]);
    templates = await mkdtemp(path.join(tmpdir(), 'svc-console-team-'));
    const builtIn = await readFile(fileURLToPath(new URL('../../../services/session/templates/claude.toml', import.meta.url)), 'utf8');
    await writeFile(path.join(templates, 'claude-team.toml'), builtIn);
    [stack, browser] = await Promise.all([
      startLocalStack({
        SVC_TEMPLATES_DIR: templates,
        ...sandboxEnvFor(claudeBinary(CLAUDE_VERSION)),
        SVC_ANTHROPIC_API_KEY: 'sk-ant-console-team',
        SVC_ANTHROPIC_UPSTREAM_URL: anthropic.url,
        SVC_LOCAL_USERS: JSON.stringify(PEOPLE),
      }),
      launchBrowser(),
    ]);
    for (const person of Object.keys(PEOPLE)) tokens[person] = await stack.signInToken(person);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await anthropic?.stop();
    if (templates) await rm(templates, { recursive: true, force: true });
  }, 60_000);

  const api = (person: string, method: string, url: string, body?: unknown) =>
    fetch(`${stack.url}${url}`, {
      method,
      headers: { authorization: `Bearer ${tokens[person]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  /** The console signed in as `person`: the sign-in with the code, its token request made for them. */
  async function signedInAs(person: string, where = '/sessions'): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    await page.route(`**${apiPaths.localToken}`, async (route) => {
      const body = route.request().postData();
      await route.continue(body ? { postData: JSON.stringify({ ...(JSON.parse(body) as object), user: person }) } : {});
    });
    await page.goto(`${stack.url}${where}#code=${stack.signInCode}`);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    return page;
  }

  /** Whether the gateway lets `person` open the worker's event stream (a WebSocket): its upgrade's answer, 101 or the refusal's status. */
  const streamAnswer = (person: string, workerId: string) =>
    new Promise<number>((resolve, reject) => {
      const request = http.request(`${stack.url}${apiPaths.eventStream(workerId, '0')}`, {
        headers: {
          authorization: `Bearer ${tokens[person]}`,
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': randomBytes(16).toString('base64'),
        },
      });
      request.on('upgrade', (response, socket) => {
        socket.destroy();
        resolve(response.statusCode ?? 0);
      });
      request.on('response', (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on('error', reject);
      request.end();
    });

  it('alice shares her session with payments as approvers: bob watches it in the console and allows its Bash call; carol gets 404 everywhere', async () => {
    const started = await api('alice', 'POST', apiPaths.sessions(), {
      template: 'claude-team',
      prompt: 'Run the tests.',
      access: [{ principal: 'group:payments', role: 'approver' }],
    });
    expect(started.status).toBe(201);
    const session = (await started.json()) as Session;
    expect(session.access).toEqual([{ principal: 'group:payments', role: 'approver' }]);

    // bob, in Chromium: the session is in his list, its worker page shows the request, he allows it.
    const bob = await signedInAs('bob');
    await bob.getByRole('link', { name: session.worker_id }).click();
    const card = bob.locator('article.approval[data-approval]');
    await card.waitFor({ timeout: 90_000 }).catch(async (err: unknown) => {
      const events = (
        (await (await api('alice', 'GET', apiPaths.sdkEvents(session.worker_id, { limit: 200 }))).json()) as {
          items: Array<{ id: string; type: string; data: unknown }>;
        }
      ).items;
      const summary = events.map((event) => `${event.id} ${event.type} ${JSON.stringify(event.data).slice(0, 200)}`).join('\n');
      throw new Error(`${String(err)}\nbob's page: ${bob.url()}: ${(await bob.locator('main').textContent())?.slice(0, 600)}\n${summary}`);
    });
    expect(await card.textContent()).toContain('tests-ran.txt');
    expect(await streamAnswer('bob', session.worker_id)).toBe(101);
    await card.getByRole('button', { name: 'Allow', exact: true }).click();
    await bob.locator('.row.decision-allow').filter({ hasText: 'bob' }).waitFor({ timeout: 30_000 });
    await bob.locator('.row.result').waitFor({ timeout: 60_000 });
    expect(await seriousViolations(bob, 'a shared worker')).toEqual([]);

    // carol: nothing of it exists for her — REST, the stream, a decision, the console's page.
    for (const url of [
      apiPaths.session(session.id),
      apiPaths.worker(session.worker_id),
      apiPaths.sdkEvents(session.worker_id),
      apiPaths.controlRequests(session.worker_id),
    ])
      expect((await api('carol', 'GET', url)).status, url).toBe(404);
    expect((await api('carol', 'POST', apiPaths.control(session.worker_id), { request_id: 'any', decision: 'allow' })).status).toBe(404);
    expect(await streamAnswer('carol', session.worker_id)).toBe(404);
    const carol = await signedInAs('carol');
    await carol.getByRole('heading', { name: 'Sessions' }).waitFor();
    expect(await carol.getByRole('link', { name: session.worker_id }).count()).toBe(0);
    const carolOnTheWorker = await signedInAs('carol', `/workers/${session.worker_id}`);
    await carolOnTheWorker.getByRole('heading', { name: 'Not found' }).waitFor({ timeout: 15_000 });
    await Promise.all([bob, carol, carolOnTheWorker].map((page) => page.context().close()));
  }, 240_000);
});
