import { apiPaths } from '@svc/protocol';

/** Who is signed in: the token lives in this page's memory only (never storage, never the URL). */
export interface SignedIn {
  token: string;
  expiresAt: number;
}

/** Renewed this long before it expires, so a request never carries a token about to lapse. */
const RENEW_BEFORE_MS = 60_000;

/**
 * The console's sign-in. With the gateway's built-in issuer (the local stack) it is one click:
 * `POST /v1/local/token`, given on loopback only, and renewed the same way before it expires.
 * Signing in through an external OIDC provider is not built yet: the sign-in page says so.
 */
export class Auth {
  private current: SignedIn | undefined;
  private renewal: ReturnType<typeof setTimeout> | undefined;
  private readonly listeners = new Set<() => void>();

  get signedIn(): SignedIn | undefined {
    return this.current;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Signs in as the local stack's user; throws with the gateway's reason when it has no local issuer or refuses. */
  async signInLocal(): Promise<void> {
    const response = await fetch(apiPaths.localToken, { method: 'POST' });
    const body = (await response.json().catch(() => ({}))) as { token?: string; expires_in?: number; message?: string; code?: string };
    if (!response.ok || !body.token || !body.expires_in) {
      throw new Error(
        response.status === 404
          ? 'this gateway has no built-in sign-in (it uses an external identity provider, which the console does not support yet)'
          : (body.message ?? `the gateway answered ${response.status}`),
      );
    }
    this.set({ token: body.token, expiresAt: Date.now() + body.expires_in * 1000 });
    clearTimeout(this.renewal);
    this.renewal = setTimeout(() => void this.signInLocal().catch(() => this.expired()), Math.max(1000, body.expires_in * 1000 - RENEW_BEFORE_MS));
  }

  /** The gateway refused the token (expired, revoked): sign in again; the page stays where it is. */
  expired(): void {
    clearTimeout(this.renewal);
    this.set(undefined);
  }

  signOut(): void {
    this.expired();
  }

  private set(value: SignedIn | undefined): void {
    this.current = value;
    for (const listener of this.listeners) listener();
  }
}
