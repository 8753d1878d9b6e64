import * as oauth from 'oauth4webapi';
import { apiPaths, CONSOLE_CALLBACK_PATH, type AccessPerson, type ConsoleSignIn } from '@svc/protocol';

/** Who is signed in: the token lives in this page's memory only (never storage, never the URL). */
export interface SignedIn {
  token: string;
  expiresAt: number;
}

/** Renewed this long before it expires, so a request never carries a token about to lapse. */
const RENEW_BEFORE_MS = 60_000;
/** A renewal that failed (the issuer away) is tried again this often while the token lasts. */
const RENEW_RETRY_MS = 5_000;
/** What survives the trip to the provider and back (the page's state is gone): never a token. */
const PENDING_KEY = 'svc.console.sign-in';

interface PendingSignIn {
  state: string;
  codeVerifier: string;
  /** The console page to come back to. */
  returnTo: string;
}

/** A provider on this machine may speak plain HTTP (a development identity provider); anywhere else HTTPS is required. */
function requestOptions(issuer: URL) {
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(issuer.hostname);
  return issuer.protocol === 'http:' && loopback ? { [oauth.allowInsecureRequests]: true } : {};
}

/**
 * The console's sign-in, in two ways the gateway offers (`GET /v1/console/sign-in`):
 * - the built-in issuer of the local stack: `POST /v1/local/token` with the stack's sign-in code
 *   (from the link `npm run up` prints, `/#code=…`, or typed in), renewed with the token itself;
 * - an OIDC provider: Authorization Code with PKCE as a public client (`oauth4webapi`). The
 *   browser goes to the provider and comes back to `/auth/callback`; only the PKCE verifier and
 *   the state wait in `sessionStorage` meanwhile, the tokens stay in memory.
 * Either way the token is renewed before it expires (the local issuer again, or the refresh
 * token); a renewal that fails is retried while the token lasts. A token the gateway refuses
 * (expired, revoked) signs out, and the page stays where it is until signed in again.
 */
export class Auth {
  private current: SignedIn | undefined;
  private renewal: ReturnType<typeof setTimeout> | undefined;
  private renew: (() => Promise<void>) | undefined;
  private readonly listeners = new Set<() => void>();
  /** The last sign-in ended because the token expired, not by signing out: the sign-in page says so. */
  lapsed = false;

  get signedIn(): SignedIn | undefined {
    return this.current;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** How this gateway signs people in. */
  static async methods(): Promise<ConsoleSignIn> {
    const response = await fetch(apiPaths.consoleSignIn);
    if (!response.ok) throw new Error(`the gateway did not say how to sign in (HTTP ${response.status})`);
    return (await response.json()) as ConsoleSignIn;
  }

  /**
   * Signs in as the local stack's user with its sign-in code (or, with none, renews the token
   * held now); `user`: one of the stack's `SVC_LOCAL_USERS` instead (docs/teams.md). Throws with
   * the gateway's reason when it refuses.
   */
  async signInLocal(code?: string, user?: string): Promise<void> {
    const renewing = code === undefined ? this.current?.token : undefined;
    const response = await fetch(apiPaths.localToken, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(renewing ? { authorization: `Bearer ${renewing}` } : {}) },
      body: JSON.stringify(code === undefined ? {} : { code, ...(user ? { user } : {}) }),
    });
    const body = (await response.json().catch(() => ({}))) as { token?: string; expires_in?: number; message?: string };
    if (!response.ok || !body.token || !body.expires_in) throw new Error(body.message ?? `the gateway answered ${response.status}`);
    this.signedInWith({ token: body.token, expiresAt: Date.now() + body.expires_in * 1000 }, () => this.signInLocal());
  }

  /** Goes to the provider to sign in; it sends the browser back to `/auth/callback`, which `completeSignIn` finishes. */
  async signInWithProvider(provider: NonNullable<ConsoleSignIn['oidc']>, returnTo: string): Promise<void> {
    const server = await discover(provider.issuer);
    if (!server.authorization_endpoint) throw new Error(`${provider.issuer} names no authorization endpoint`);
    const pending: PendingSignIn = { state: oauth.generateRandomState(), codeVerifier: oauth.generateRandomCodeVerifier(), returnTo };
    const url = new URL(server.authorization_endpoint);
    url.searchParams.set('client_id', provider.client_id);
    url.searchParams.set('redirect_uri', callbackUrl());
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', provider.scope);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(pending.codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', pending.state);
    sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
    window.location.assign(url);
  }

  /** Back from the provider: trades the code for tokens; answers the page to go back to. */
  async completeSignIn(provider: NonNullable<ConsoleSignIn['oidc']>, callback: URL): Promise<string> {
    const saved = sessionStorage.getItem(PENDING_KEY);
    sessionStorage.removeItem(PENDING_KEY);
    if (!saved) throw new Error('no sign-in was under way in this tab: start again');
    const pending = JSON.parse(saved) as PendingSignIn;
    const server = await discover(provider.issuer);
    const client: oauth.Client = { client_id: provider.client_id };
    const parameters = oauth.validateAuthResponse(server, client, callback, pending.state);
    const options = requestOptions(new URL(provider.issuer));
    const response = await oauth.authorizationCodeGrantRequest(server, client, oauth.None(), parameters, callbackUrl(), pending.codeVerifier, options);
    this.useTokens(server, client, await oauth.processAuthorizationCodeResponse(server, client, response));
    return pending.returnTo;
  }

  /** The gateway refused the token (expired, revoked): sign in again; the page stays where it is. */
  expired(): void {
    this.lapsed = this.current !== undefined || this.lapsed;
    this.end();
  }

  signOut(): void {
    this.lapsed = false;
    this.end();
  }

  private useTokens(server: oauth.AuthorizationServer, client: oauth.Client, tokens: oauth.TokenEndpointResponse, previousRefreshToken?: string): void {
    const expiresInS = tokens.expires_in ?? 300;
    // A provider that does not rotate refresh tokens answers a refresh without a new one: the old one still serves.
    const refreshToken = tokens.refresh_token ?? previousRefreshToken;
    this.signedInWith(
      { token: tokens.access_token, expiresAt: Date.now() + expiresInS * 1000 },
      refreshToken
        ? async () => {
            const options = requestOptions(new URL(server.issuer));
            const response = await oauth.refreshTokenGrantRequest(server, client, oauth.None(), refreshToken, options);
            this.useTokens(server, client, await oauth.processRefreshTokenResponse(server, client, response), refreshToken);
          }
        : undefined,
    );
  }

  private signedInWith(value: SignedIn, renew: (() => Promise<void>) | undefined): void {
    this.lapsed = false;
    this.renew = renew;
    this.set(value);
    this.scheduleRenewal(Math.max(1000, value.expiresAt - Date.now() - RENEW_BEFORE_MS));
  }

  private scheduleRenewal(inMs: number): void {
    clearTimeout(this.renewal);
    const renew = this.renew;
    if (!renew) return; // no refresh token: the gateway refuses the token once it expires, and the page asks to sign in
    this.renewal = setTimeout(() => {
      renew().catch(() => {
        // The issuer is away: try again while the token lasts; once it has expired, the gateway says so.
        if (this.current && this.current.expiresAt - Date.now() > RENEW_RETRY_MS) this.scheduleRenewal(RENEW_RETRY_MS);
      });
    }, inMs);
  }

  private end(): void {
    clearTimeout(this.renewal);
    this.renew = undefined;
    this.set(undefined);
  }

  private set(value: SignedIn | undefined): void {
    this.current = value;
    for (const listener of this.listeners) listener();
  }
}

/** A JWT's claims, read without checking them (the gateway does); undefined for a token that is no JWT. */
function tokenClaims(token: string): Record<string, unknown> | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const bytes = Uint8Array.from(atob(payload.replaceAll('-', '+').replaceAll('_', '/')), (char) => char.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
    return typeof claims === 'object' && claims !== null ? (claims as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The `sub` of a JWT access token, read without checking it (the gateway does): enough to tell a
 * person's own messages in a history from someone else's. Undefined for a token that is no JWT.
 */
export function tokenSubject(token: string): string | undefined {
  const sub = tokenClaims(token)?.['sub'];
  return typeof sub === 'string' ? sub : undefined;
}

/**
 * The person a token names, as far as the page can tell: its `sub`, and its groups and admin
 * claim by their default names (`groups`, `svc_admin`: docs/teams.md). Enough to offer what the
 * gateway would allow (the access editor to a session's admins); the gateway decides, and a
 * deployment that renames the claims gets its refusal, said in place.
 */
export function tokenPerson(token: string): AccessPerson | undefined {
  const claims = tokenClaims(token);
  const sub = claims?.['sub'];
  if (typeof sub !== 'string') return undefined;
  const groups = claims?.['groups'];
  return {
    sub,
    groups: Array.isArray(groups) ? groups.filter((group): group is string => typeof group === 'string') : typeof groups === 'string' ? [groups] : [],
    admin: claims?.['svc_admin'] === true,
  };
}

function callbackUrl(): string {
  return new URL(CONSOLE_CALLBACK_PATH, window.location.origin).href;
}

async function discover(issuer: string): Promise<oauth.AuthorizationServer> {
  const url = new URL(issuer);
  return oauth.processDiscoveryResponse(url, await oauth.discoveryRequest(url, requestOptions(url)));
}
