import { useState, type FormEvent } from 'react';
import { apiPaths, WORKER_STATUSES, type ListResponseOf, type Session, type StoredEvent, type WorkerStatus } from '@svc/protocol';
import { ApiError } from '../api.js';
import { useConsole } from '../console-context.js';
import { Link, navigate } from '../router.js';
import { usePolling } from '../use-polling.js';

/** Every session the user may see, newest first, with its open approvals; a form to start one. */
export function SessionsPage() {
  const { api } = useConsole();
  const [status, setStatus] = useState<WorkerStatus | ''>('');
  const { value, error } = usePolling(async () => {
    const page = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, ...(status ? { status } : {}) }));
    const running = page.items.filter((session) => session.status === 'running');
    const counts = await Promise.all(
      running.map(async (session) => {
        const open = await api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(session.worker_id, { state: 'open' }));
        return [session.worker_id, open.total] as const;
      }),
    );
    return { sessions: page.items, openCounts: Object.fromEntries(counts) as Record<string, number> };
  }, [api, status]);
  const sessions = value?.sessions;
  const openCounts = value?.openCounts ?? {};

  return (
    <section aria-labelledby="sessions-title">
      <header className="page-header">
        <h1 id="sessions-title">Sessions</h1>
        <label>
          Status
          <select value={status} onChange={(event) => setStatus(event.target.value as WorkerStatus | '')}>
            <option value="">all</option>
            {WORKER_STATUSES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </label>
      </header>
      <StartSession />
      {error && <p role="alert">{error}</p>}
      {sessions === undefined ? (
        <p>Loading…</p>
      ) : sessions.length === 0 ? (
        <p>No sessions{status ? ` ${status}` : ''} yet.</p>
      ) : (
        <table className="sessions">
          <thead>
            <tr>
              <th scope="col">Worker</th>
              <th scope="col">Status</th>
              <th scope="col">Template</th>
              <th scope="col">Owner</th>
              <th scope="col">Age</th>
              <th scope="col">Approvals</th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => (
              <tr key={session.id}>
                <td>
                  <Link href={`/workers/${session.worker_id}`}>{session.worker_id}</Link>
                </td>
                <td>
                  <span className={`status status-${session.status}`}>{session.status}</span>
                  {session.failure && (
                    <span className="failure">
                      {' '}
                      ({session.failure.step}: {session.failure.reason})
                    </span>
                  )}
                </td>
                <td>{session.template}</td>
                <td>{session.owner}</td>
                <td>{age(session.created_at)}</td>
                <td>{openCounts[session.worker_id] ? <span className="badge">{openCounts[session.worker_id]} open</span> : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function StartSession() {
  const { api } = useConsole();
  const [template, setTemplate] = useState('demo');
  const [prompt, setPrompt] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const start = (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    api
      .request<Session>('POST', apiPaths.sessions(), { template, ...(prompt.trim() ? { prompt } : {}) })
      .then((session) => navigate(`/workers/${session.worker_id}`))
      .catch((err: unknown) => setError(err instanceof ApiError ? `${err.message} (${err.code})` : String(err)))
      .finally(() => setBusy(false));
  };
  return (
    <form className="start" onSubmit={start} aria-label="Start a session">
      <label>
        Template
        <input value={template} onChange={(event) => setTemplate(event.target.value)} required pattern="[a-z0-9][a-z0-9_\-]{0,63}" />
      </label>
      <label>
        First message (optional)
        <input value={prompt} onChange={(event) => setPrompt(event.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={busy}>
        Start session
      </button>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </form>
  );
}

function age(createdAt: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(createdAt)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}
