import { useState } from 'react';
import { useConsole } from '../console-context.js';

export function SignInPage() {
  const { auth } = useConsole();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const signIn = () => {
    setBusy(true);
    setError(undefined);
    auth
      .signInLocal()
      .catch((err: unknown) => setError(err instanceof Error ? err.message : String(err)))
      .finally(() => setBusy(false));
  };
  return (
    <section className="sign-in" aria-labelledby="sign-in-title">
      <h1 id="sign-in-title">Sign in</h1>
      <p>Watch your agents and decide what they may do.</p>
      <button type="button" className="primary" onClick={signIn} disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in as the local user'}
      </button>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </section>
  );
}
