import { generateKeyPairSync } from 'node:crypto';
import type { Server } from 'node:http';
import Provider from 'oidc-provider';

export interface RunningProvider {
  issuer: string;
  /** Token endpoint calls, by grant type (what the console asked for). */
  grants: string[];
  stop(): Promise<void>;
}

/**
 * A real OpenID provider for the browser tests (`oidc-provider`, a certified implementation),
 * standing in for a company's identity provider: Authorization Code with PKCE for the console as
 * a public client, JWT access tokens for the audience `svc`, refresh tokens with
 * `offline_access`, and its development login and consent pages, where any login and password sign in.
 */
export async function startOidcProvider(options: { port: number; consoleUrl: string; accessTokenTtlS: number }): Promise<RunningProvider> {
  const issuer = `http://127.0.0.1:${options.port}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'svc-console',
        token_endpoint_auth_method: 'none',
        redirect_uris: [`${options.consoleUrl}/auth/callback`],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
    ],
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' }] },
    scopes: ['openid', 'profile', 'offline_access', 'svc'],
    claims: { openid: ['sub'], profile: ['name'] },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, name: `Provider user ${sub}` }) }),
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => 'urn:svc:api',
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope: 'svc',
          audience: 'svc',
          accessTokenFormat: 'jwt',
          accessTokenTTL: options.accessTokenTtlS,
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    // Like many company providers (Keycloak's default): a refresh token for a client allowed the grant, without the consent prompt `offline_access` needs here.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    pkce: { required: () => true },
  });
  const grants: string[] = [];
  provider.on('grant.success', (ctx) => grants.push(String((ctx.oidc.params as { grant_type?: string } | undefined)?.grant_type)));
  const server: Server = provider.listen(options.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  return {
    issuer,
    grants,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
