import Type, { type Static } from 'typebox';

/**
 * `GET /v1/console/sign-in`: how the web console signs people in — with the built-in issuer
 * (the local stack's sign-in code), and/or with the OIDC provider the gateway trusts (Authorization
 * Code with PKCE, as the public client `client_id`).
 */
export const ConsoleSignInSchema = Type.Object(
  {
    local: Type.Boolean({ description: 'The built-in issuer gives tokens here (`POST /v1/local/token`, for the sign-in code of the local stack).' }),
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

/**
 * The local stack's sign-in code (docs/gateway.md, "Built-in issuer"): a secret in this file of
 * the stack's state directory (mode 0600), printed by `npm run up`. `POST /v1/local/token` gives a
 * token for it, so only the person at the machine gets one, never "any loopback caller".
 */
export const LOCAL_SIGN_IN_CODE_FILE = 'local-sign-in-code';

/** Where the console finds the code in a link `npm run up` prints: `/#code=…` (a fragment never reaches a server's log). */
export const CONSOLE_SIGN_IN_CODE_PARAM = 'code';

/** `POST /v1/local/token`: the sign-in code, or nothing with `Authorization: Bearer <a token of this issuer>` to renew it. */
export const LocalTokenBody = Type.Object(
  {
    code: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The sign-in code of the local stack.' })),
    user: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 256,
        description: "With the code: one of the stack's `SVC_LOCAL_USERS` instead of the local user (docs/teams.md).",
      }),
    ),
  },
  { additionalProperties: false },
);
export type LocalTokenBodyType = Static<typeof LocalTokenBody>;
