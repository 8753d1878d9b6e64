import { existsSync } from 'node:fs';
import path from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyReply } from 'fastify';
import { CodedError, CONSOLE_CALLBACK_PATH, ConsoleSignInSchema, type ConsoleSignIn } from '@svc/protocol';
import { DEFAULT_CONSOLE_OIDC_SCOPE } from '../config.js';
import type { AppSettings } from '../plugins/settings.js';
import { routePlugin } from './route-plugin.js';

/**
 * The console's own paths (client-side routes): each is answered with `index.html`, and the
 * page's script shows what the path names. Anything else outside `/v1` is not the console's.
 */
const CONSOLE_PAGES = ['/', '/sessions', '/inbox', '/policy', '/workers/:id', CONSOLE_CALLBACK_PATH] as const;

/**
 * What a browser may do with the console's pages: scripts, styles and fonts from the gateway
 * only (no inline script; React sets styles through the DOM, which CSP allows), API and
 * WebSocket calls to the gateway only, never framed (clickjacking an "Allow" button).
 */
export function consoleCsp(signIn: ConsoleSignIn): string {
  // Signing in with a provider, the page reads its discovery document and calls its token endpoint.
  const provider = signIn.oidc ? ` ${new URL(signIn.oidc.issuer).origin}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    // blob: the images of people's messages, fetched with the person's token (an <img> cannot send it).
    "img-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self'${provider}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** How the console signs people in (`GET /v1/console/sign-in`): with the built-in issuer's code, and with the OIDC provider when the console has a client id there. */
function signInOf(settings: AppSettings, local: boolean): ConsoleSignIn {
  const { oidcIssuer, consoleOidcClientId } = settings;
  if (!oidcIssuer || !consoleOidcClientId) return { local };
  return { local, oidc: { issuer: oidcIssuer, client_id: consoleOidcClientId, scope: settings.consoleOidcScope ?? DEFAULT_CONSOLE_OIDC_SCOPE } };
}

function secureHeaders(reply: FastifyReply, csp: string): void {
  reply.header('content-security-policy', csp);
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('cross-origin-opener-policy', 'same-origin');
}

/**
 * Serves the web console at `/` (docs/console.md) from its built files (`SVC_CONSOLE_DIR`:
 * `index.html` and `assets/`; unset or not built, its pages are 404s that say why). Files under
 * `/assets/` have content hashes in their names and are cached for a year; `index.html` is
 * revalidated every time, so a new build is picked up at the next load.
 */
export const consoleRoutes = routePlugin('svc-console-routes', ['svc-settings', 'svc-users'], async (app) => {
  const dir = app.settings.consoleDir;
  const signIn = signInOf(app.settings, app.localIssuer !== undefined);
  const built = dir !== undefined && existsSync(path.join(dir, 'index.html'));
  const config = { auth: 'public' as const };
  const schema = { hide: true };
  const csp = consoleCsp(signIn);
  app.get(
    '/v1/console/sign-in',
    {
      config,
      schema: {
        tags: ['console'],
        summary: 'How the web console signs people in',
        description:
          'Public: the sign-in page reads it before anyone is signed in. `oidc` is there when the gateway trusts a provider and `SVC_CONSOLE_OIDC_CLIENT_ID` names the console at it.',
        response: { 200: ConsoleSignInSchema },
      },
    },
    async () => signIn,
  );
  if (!built) {
    const notBuilt = () => {
      throw new CodedError(
        'not_found',
        dir === undefined
          ? 'the web console is not served by this gateway (SVC_CONSOLE_DIR is not set)'
          : `the web console is not built: ${dir} has no index.html (npx nx run @svc/console:build)`,
      );
    };
    for (const page of CONSOLE_PAGES) app.get(page, { config, schema }, notBuilt);
    return;
  }
  // `serve: false`: the routes are ours, so they carry `auth: 'public'` (the files hold no data)
  // and the caching rule; @fastify/static only sends the files (ranges, ETags, no path escapes).
  await app.register(fastifyStatic, { root: dir, serve: false });
  const assets = path.join(dir, 'assets');
  app.get<{ Params: { '*': string } }>('/assets/*', { config, schema }, (request, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    return reply.sendFile(request.params['*'], assets, { immutable: true, maxAge: '365d' });
  });
  for (const page of CONSOLE_PAGES) {
    app.get(page, { config, schema }, (_request, reply) => {
      secureHeaders(reply, csp);
      reply.header('cache-control', 'no-cache');
      return reply.sendFile('index.html', dir, { cacheControl: false });
    });
  }
});
