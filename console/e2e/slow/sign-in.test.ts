import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { freePort } from '@svc/test-support';
import { launchBrowser } from '@svc/test-support/browser';
import { startLocalStack, type RunningStack } from '../local-stack.js';
import { startOidcProvider, type RunningProvider } from '../oidc-provider.js';

describe('signing in again when the token has expired (the built-in issuer, 5 s tokens)', () => {
  let stack: RunningStack;
  let browser: Browser;
  beforeAll(async () => {
    [stack, browser] = await Promise.all([startLocalStack({ SVC_LOCAL_TOKEN_TTL_S: '5' }), launchBrowser()]);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
  }, 60_000);

  it('the token lapses (the issuer unreachable, so no renewal): the page asks to sign in again, says why, and comes back to the same worker', async () => {
    const page = await browser.newPage();
    const workerUrl = `${stack.url}/workers/${stack.demoWorker}`;
    await page.goto(`${workerUrl}#code=${stack.signInCode}`);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    await page.getByRole('heading', { name: stack.demoWorker }).waitFor();
    // Renewals now fail, as if the issuer were away: the token lapses, the gateway refuses it (401).
    await page.route('**/v1/local/token', (route) => route.abort('connectionrefused'));
    await page.getByText('Your sign-in has expired. Sign in again to go on where you were.').waitFor({ timeout: 20_000 });
    expect(page.url()).toBe(workerUrl);
    expect(await page.getByRole('heading', { name: stack.demoWorker }).count()).toBe(0);
    await page.unroute('**/v1/local/token');
    // The code is not kept (the link's fragment was taken out of the address bar): it is typed again.
    await page.getByLabel(/Sign-in code/).fill(stack.signInCode);
    await page.getByRole('button', { name: 'Sign in as the local user' }).click();
    await page.getByRole('heading', { name: stack.demoWorker }).waitFor();
    // Its history again (the list opens at its end: whichever rows are on screen).
    await page.locator('[data-event-id]').first().waitFor({ timeout: 10_000 });
    expect(page.url()).toBe(workerUrl);
    await page.context().close();
  }, 60_000);
});

describe("signing in at the company's identity provider (OIDC, Authorization Code with PKCE)", () => {
  let stack: RunningStack;
  let provider: RunningProvider;
  let browser: Browser;
  beforeAll(async () => {
    const providerPort = await freePort();
    // The gateway trusts the provider (it discovers its keys when the first token comes) and tells the console about it.
    [stack, browser] = await Promise.all([
      startLocalStack({
        SVC_OIDC_ISSUER: `http://127.0.0.1:${providerPort}`,
        SVC_CONSOLE_OIDC_CLIENT_ID: 'svc-console',
        SVC_CONSOLE_OIDC_SCOPE: 'openid profile offline_access svc',
      }),
      launchBrowser(),
    ]);
    provider = await startOidcProvider({ port: providerPort, consoleUrl: stack.url, accessTokenTtlS: 65 });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await provider?.stop();
  }, 60_000);

  it('sign in at the provider, come back to the page it started from, use the API as that user; the token is refreshed before it expires; sign out', async () => {
    const page = await browser.newPage();
    const tokenCalls: string[] = [];
    page.on('request', (request) => {
      if (request.url().startsWith(provider.issuer) && request.method() === 'POST') tokenCalls.push(request.postData() ?? '');
    });
    await page.goto(`${stack.url}/inbox`);
    expect(await page.getByRole('button', { name: 'Sign in as the local user' }).count()).toBe(0);
    await page.getByRole('button', { name: `Sign in with 127.0.0.1:${new URL(provider.issuer).port}` }).click();
    // The provider's own login page (any login and password sign in there).
    await page.waitForURL((url) => url.href.startsWith(provider.issuer));
    await page.locator('input[name="login"]').fill('ada');
    await page.locator('input[name="password"]').fill('any');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    // Its consent page: the console asks for who you are, staying signed in, and the svc API.
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${stack.url}/inbox`).catch(async (err: unknown) => {
      throw new Error(`${String(err)}\nat ${page.url()}: ${(await page.locator('body').innerText()).slice(0, 500)}`);
    });
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    await page.getByText('Nothing waits for a decision.').waitFor();
    // The code went with the PKCE verifier; nothing of the sign-in is left in the address or in storage.
    expect(tokenCalls.some((body) => body.includes('grant_type=authorization_code') && body.includes('code_verifier='))).toBe(true);
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    // Signed in as the provider's user: a session started now is theirs.
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/\/workers\/wrk_/);
    await page.getByRole('link', { name: 'Sessions' }).click();
    await page.getByRole('cell', { name: 'ada', exact: true }).waitFor({ timeout: 10_000 });
    // 65 s tokens are renewed a minute early: with the refresh token, at about 5 s.
    await expect.poll(() => provider.grants, { timeout: 20_000 }).toContain('refresh_token');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.context().close();
  }, 90_000);
});
