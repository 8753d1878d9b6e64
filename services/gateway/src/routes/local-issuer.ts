import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import type { LocalIssuer } from '@svc/auth';
import { APIErrorSchema, CodedError } from '@svc/protocol';

export interface LocalIssuerRoutesOptions {
  issuer: LocalIssuer;
  audience: string;
  /** How long a token lasts (`SVC_LOCAL_TOKEN_TTL_S`). */
  ttlSeconds: number;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);
/** The user every token of the built-in issuer is for (the local stack's one user, an admin). */
export const LOCAL_USER = 'local-user';

const TokenResponse = Type.Object({
  token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
});

/**
 * The built-in issuer of the local stack: discovery and JWKS (so any OIDC client can verify its
 * tokens) and `POST /v1/local/token`, which gives the local user a token — on loopback only.
 */
export const localIssuerRoutes: FastifyPluginAsync<LocalIssuerRoutesOptions> = async (app, { issuer, audience, ttlSeconds }) => {
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
        summary: 'A user token for the local user (loopback callers only)',
        response: { 200: TokenResponse, 403: APIErrorSchema, 429: APIErrorSchema },
      },
    },
    async (request) => {
      if (!LOOPBACK.has(request.ip)) throw new CodedError('forbidden', 'local tokens are given to loopback callers only');
      const token = await issuer.mintUserToken({ sub: LOCAL_USER, audience, name: 'Local user', admin: true, ttlSeconds });
      return { token, token_type: 'Bearer' as const, expires_in: ttlSeconds };
    },
  );
};
