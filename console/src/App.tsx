import { useEffect, useMemo, useState, useSyncExternalStore } from 'react';
import { CONSOLE_CALLBACK_PATH } from '@svc/protocol';
import { createApi } from './api.js';
import { Auth } from './auth.js';
import { Console } from './console-context.js';
import { InboxPage } from './pages/InboxPage.js';
import { NotFoundPage } from './pages/NotFoundPage.js';
import { PolicyPage } from './pages/PolicyPage.js';
import { SessionsPage } from './pages/SessionsPage.js';
import { SignInCallbackPage, SignInPage } from './pages/SignInPage.js';
import { WorkerPage } from './pages/WorkerPage.js';
import { Link, usePath } from './router.js';

/** The page a path names; the paths are those the gateway answers with the console (`CONSOLE_PAGES`). */
function Page({ path }: { path: string }) {
  const worker = /^\/workers\/([A-Za-z0-9_-]{1,64})$/.exec(path);
  if (worker) return <WorkerPage key={worker[1]} workerId={worker[1]!} />;
  if (path === '/' || path === '/sessions') return <SessionsPage />;
  if (path === '/inbox') return <InboxPage />;
  if (path === '/policy') return <PolicyPage />;
  return <NotFoundPage what={`There is no page ${path} in the console.`} />;
}

/** The window's title for the page a path names. */
function titleOf(path: string): string {
  if (path.startsWith('/workers/')) return `${path.slice('/workers/'.length)} · svc`;
  if (path === '/inbox') return 'Inbox · svc';
  if (path === '/policy') return 'Policy · svc';
  return 'Sessions · svc';
}

export function App() {
  const auth = useMemo(() => new Auth(), []);
  const api = useMemo(() => createApi(auth), [auth]);
  const signedIn = useSyncExternalStore(
    (listener) => auth.subscribe(listener),
    () => auth.signedIn,
  );
  const path = usePath();
  const [title, setTitle] = useState('svc console');
  useEffect(() => {
    document.title = title;
  }, [title]);
  useEffect(() => setTitle(titleOf(path)), [path]);

  return (
    <Console.Provider value={{ auth, api }}>
      <header className="top">
        <Link href="/sessions" className="brand">
          svc
        </Link>
        <nav aria-label="Pages">
          <Link href="/sessions" aria-current={path === '/' || path === '/sessions' ? 'page' : undefined}>
            Sessions
          </Link>
          <Link href="/inbox" aria-current={path === '/inbox' ? 'page' : undefined}>
            Inbox
          </Link>
          <Link href="/policy" aria-current={path === '/policy' ? 'page' : undefined}>
            Policy
          </Link>
        </nav>
        {signedIn && (
          <button type="button" className="quiet" onClick={() => auth.signOut()}>
            Sign out
          </button>
        )}
      </header>
      {/* Signing in again (an expired token) keeps the page: it is rendered again once signed in. */}
      <main>{path === CONSOLE_CALLBACK_PATH ? <SignInCallbackPage /> : signedIn ? <Page path={path} /> : <SignInPage />}</main>
    </Console.Provider>
  );
}
