import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import { AuthenticationError, signedInAt } from '@svc/auth';
import { CodedError, createChecker, describeFieldErrors, LOCAL_SIGN_IN_CODE_FILE, LocalTokenBody, type LocalTokenBodyType } from '@svc/protocol';
import { DEFAULT_LOCAL_TOKEN_TTL_S } from '../config.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** How long renewals may carry a sign-in with the code on: after this the code is asked for again (a leaked token does not live for ever). */
export const LOCAL_SIGN_IN_MAX_AGE_S = 7 * 86_400;

/** The user every token of the built-in issuer is for (the local stack's one user, an admin). */
export const LOCAL_USER = 'local-user';

const TokenResponse = Type.Object({
  token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
});

const isLocalTokenBody = createChecker<LocalTokenBodyType>(LocalTokenBody);

const refused = () =>
  new CodedError(
    'forbidden',
    `local tokens are given for the stack's sign-in code (in ${LOCAL_SIGN_IN_CODE_FILE} of its state directory, printed by \`npm run up\`), or to renew a valid one`,
  );

/** The token a renewal presents (`Authorization: Bearer …`), if any. */
function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  return typeof header === 'string' ? /^Bearer (\S+)$/i.exec(header)?.[1] : undefined;
}

/**
 * The built-in issuer of the local stack: discovery and JWKS (so any OIDC client can verify its
 * tokens) and `POST /v1/local/token`, which gives the local user a token for the stack's sign-in
 * code — a secret only the person at the machine can read — or renews a valid token. Being a
 * loopback caller proves nothing: a sandbox's channel arrives from loopback too. A gateway that
 * is not its own issuer (`app.localIssuer` unset) has none of these routes.
 */
export const localIssuerRoutes = routePlugin('svc-local-issuer-routes', ['svc-settings', 'svc-users'], async (app) => {
  const { localIssuer: issuer, users } = app;
  if (!issuer) return;
  // A renewal's token is checked by `users`: one of this issuer's, still valid.
  const audience = app.settings.oidcAudience;
  const ttlSeconds = app.settings.localTokenTtlSeconds ?? DEFAULT_LOCAL_TOKEN_TTL_S;
  const localUsers = app.settings.localUsers ?? {};
  const publicRoute = { auth: 'public' as const };
  app.get(
    '/.well-known/openid-configuration',
    { config: publicRoute, schema: { tags: ['local issuer'], summary: 'OIDC discovery of the built-in issuer' } },
    async () => issuer.discoveryDocument(),
  );
  app.get('/.well-known/jwks.json', { config: publicRoute, schema: { tags: ['local issuer'], summary: 'Public keys of the built-in issuer' } }, async () =>
    issuer.jwks(),
  );
  app.post(
    '/v1/local/token',
    {
      config: publicRoute,
      schema: {
        tags: ['local issuer'],
        summary: "A user token for the local user (or one of SVC_LOCAL_USERS), for the stack's sign-in code (or to renew a valid token)",
        description:
          'Body `{"code": "<the sign-in code>"}` (with `"user": "<name>"` for one of the stack\'s `SVC_LOCAL_USERS`); or no body, with `Authorization: Bearer <a valid token of this issuer>`, to renew it for its own user.',
        response: { 200: TokenResponse, ...errorResponses(400, 403, 429) },
      },
    },
    async (request) => {
      // A renewal may come without a body, which a body schema would refuse: checked here.
      const checked = isLocalTokenBody.check(request.body ?? {}, '/body');
      if (!checked.ok) throw new CodedError('invalid_request', describeFieldErrors(checked.errors), checked.errors);
      const { code, user } = checked.value;
      let authTime: number;
      let sub: string;
      if (code !== undefined) {
        if (!issuer.isSignInCode(code)) throw refused();
        if (user !== undefined && user !== LOCAL_USER && !Object.hasOwn(localUsers, user))
          throw new CodedError(
            'invalid_request',
            `/body/user: ${user} is not one of this stack's users (SVC_LOCAL_USERS names ${Object.keys(localUsers).join(', ') || 'none'})`,
          );
        sub = user ?? LOCAL_USER;
        authTime = Math.floor(Date.now() / 1000);
      } else {
        if (user !== undefined) throw new CodedError('invalid_request', "/body/user goes with /body/code: a renewal is for the token's own user");
        const token = presentedToken(request);
        if (token === undefined) throw refused();
        try {
          sub = (await users.verify(token)).sub;
        } catch (err) {
          if (err instanceof AuthenticationError) throw refused();
          throw err;
        }
        // A renewal carries the sign-in's time on, up to a week: then the code is asked for again.
        const since = signedInAt(token);
        if (since === undefined || Date.now() / 1000 - since > LOCAL_SIGN_IN_MAX_AGE_S)
          throw new CodedError('forbidden', 'this sign-in is older than a week (or was not made with the code): sign in again with the sign-in code');
        authTime = since;
      }
      // The local user is the stack's admin; the others are who SVC_LOCAL_USERS says, none an admin.
      const claims =
        sub === LOCAL_USER ? { name: 'Local user', admin: true } : { name: localUsers[sub]?.name ?? sub, admin: false, groups: localUsers[sub]?.groups ?? [] };
      const token = await issuer.mintUserToken({ sub, audience, ...claims, ttlSeconds, authTime });
      return { token, token_type: 'Bearer' as const, expires_in: ttlSeconds };
    },
  );
});
