import fp from 'fastify-plugin';
import type { LocalIssuer, OidcVerifier } from '@svc/auth';

declare module 'fastify' {
  interface FastifyInstance {
    /** Checks a person's token (an OIDC JWT of the configured issuer, or of the built-in one). */
    users: OidcVerifier;
    /** The built-in issuer of the local stack (`SVC_LOCAL_ISSUER=true`); undefined when people sign in elsewhere. */
    localIssuer: LocalIssuer | undefined;
  }
}

/**
 * `app.users` and `app.localIssuer`: who people are. One part, two names: when the gateway is its
 * own issuer, the verifier checks that issuer's tokens with its keys.
 */
export const usersPlugin = fp<{ users: OidcVerifier; localIssuer: LocalIssuer | undefined }>(
  async (app, { users, localIssuer }) => {
    app.decorate('users', users);
    app.decorate('localIssuer', localIssuer);
  },
  { name: 'svc-users', fastify: '5.x' },
);
