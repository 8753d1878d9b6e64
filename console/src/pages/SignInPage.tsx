import { useEffect, useState } from 'react';
import { CONSOLE_SIGN_IN_CODE_PARAM, LOCAL_SIGN_IN_CODE_FILE, type ConsoleSignIn } from '@svc/protocol';
import { Auth } from '../auth.js';
import { useConsole } from '../console-context.js';
import { navigate } from '../router.js';

/**
 * The local stack's sign-in code from the link `npm run up` prints (`/#code=…`), taken out of the
 * address bar at once so it stays in no history entry; kept in this page's memory only.
 */
function takeCodeFromLink(): string {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const code = fragment.get(CONSOLE_SIGN_IN_CODE_PARAM) ?? '';
  if (code) window.history.replaceState(window.history.state, '', `${window.location.pathname}${window.location.search}`);
  return code;
}

/** How to sign in, as the gateway offers it; after an expired token it says so, and signing in comes back to the same page. */
export function SignInPage() {
  const { auth } = useConsole();
  const [methods, setMethods] = useState<ConsoleSignIn>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [code, setCode] = useState(takeCodeFromLink);
  /** One of the local stack's other users (`SVC_LOCAL_USERS`), or empty for its own. */
  const [user, setUser] = useState('');
  useEffect(() => {
    Auth.methods()
      .then(setMethods)
      .catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)));
  }, []);
  const attempt = (signIn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    signIn()
      .catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)))
      .finally(() => setBusy(false));
  };
  const here = `${window.location.pathname}${window.location.search}`;
  return (
    <section className="sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in</h1>
      {auth.lapsed ? (
        <p role="status">Your sign-in has expired. Sign in again to go on where you were.</p>
      ) : (
        <p>Watch your agents and decide what they may do.</p>
      )}
      {methods === undefined && !error && <p>Loading…</p>}
      <div className="buttons">
        {methods?.local && (
          <form
            className="local-sign-in"
            onSubmit={(event) => {
              event.preventDefault();
              attempt(() => auth.signInLocal(code.trim(), user.trim() || undefined));
            }}
          >
            <label>
              Sign-in code{' '}
              <small>
                (printed by <code>npm run up</code>, in <code>{LOCAL_SIGN_IN_CODE_FILE}</code> of its state directory)
              </small>
              <input type="password" autoComplete="off" value={code} onChange={(event) => setCode(event.target.value)} required />
            </label>
            <label>
              User{' '}
              <small>
                (empty for the local user; or one of the stack's <code>SVC_LOCAL_USERS</code>)
              </small>
              <input autoComplete="off" value={user} onChange={(event) => setUser(event.target.value)} />
            </label>
            <button type="submit" className="primary" disabled={busy || code.trim() === ''}>
              {busy ? 'Signing in…' : user.trim() ? `Sign in as ${user.trim()}` : 'Sign in as the local user'}
            </button>
          </form>
        )}
        {methods?.oidc && (
          <button type="button" className="primary" onClick={() => attempt(() => auth.signInWithProvider(methods.oidc!, here))} disabled={busy}>
            Sign in with {new URL(methods.oidc.issuer).host}
          </button>
        )}
      </div>
      {methods && !methods.local && !methods.oidc && (
        <p role="alert" className="error">
          This gateway offers no way to sign in to the console: set SVC_CONSOLE_OIDC_CLIENT_ID (see docs/console.md).
        </p>
      )}
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </section>
  );
}

/** `/auth/callback`: back from the provider with a code; trades it for tokens and goes back to the page the sign-in started from. */
export function SignInCallbackPage() {
  const { auth } = useConsole();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let done = false;
    Auth.methods()
      .then((methods) => {
        if (!methods.oidc) throw new Error('this gateway has no identity provider to come back from');
        return auth.completeSignIn(methods.oidc, new URL(window.location.href));
      })
      .then((returnTo) => {
        if (done) return;
        // The code in the address is spent: the history keeps the page, not the callback.
        navigate(returnTo, { replace: true });
      })
      .catch((err: unknown) => !done && setError(err instanceof Error ? err.message : String(err)));
    return () => {
      done = true;
    };
  }, [auth]);
  return (
    <section className="sign-in" aria-labelledby="callback-title">
      <h1 id="callback-title">Signing in…</h1>
      {error && (
        <>
          <p role="alert" className="error">
            Could not sign in: {error}
          </p>
          <a href="/">Start again</a>
        </>
      )}
    </section>
  );
}
