import Type, { type Static } from 'typebox';

/**
 * `GET /v1/console/sign-in`: how the web console signs people in — with the built-in issuer
 * (one click, loopback only), and/or with the OIDC provider the gateway trusts (Authorization
 * Code with PKCE, as the public client `client_id`).
 */
export const ConsoleSignInSchema = Type.Object(
  {
    local: Type.Boolean({ description: 'The built-in issuer gives tokens here (`POST /v1/local/token`, loopback callers only).' }),
    oidc: Type.Optional(
      Type.Object(
        {
          issuer: Type.String({ description: 'The provider (its `/.well-known/openid-configuration`).' }),
          client_id: Type.String({ description: 'The console, registered at the provider as a public client (no secret; PKCE).' }),
          scope: Type.String(),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, title: 'ConsoleSignIn' },
);
export type ConsoleSignIn = Static<typeof ConsoleSignInSchema>;

/** Where the provider sends the browser back with the code (a console page: `CONSOLE_PAGES`). */
export const CONSOLE_CALLBACK_PATH = '/auth/callback';
