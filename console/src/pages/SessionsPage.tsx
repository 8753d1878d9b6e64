import { useEffect, useState, type FormEvent } from 'react';
import { formatCost } from '@svc/viewer';
import {
  apiPaths,
  isEndedStatus,
  WORKER_STATUSES,
  type EventData,
  type ListResponseOf,
  type Session,
  type StoredEvent,
  type TemplateSummary,
  type WorkerStatus,
} from '@svc/protocol';
import { ApiError } from '../api.js';
import { useConsole } from '../console-context.js';
import { Link, navigate } from '../router.js';
import { usePolling } from '../use-polling.js';

/** Every session the user may see, newest first, with its cost and open approvals; a form to start one. */
export function SessionsPage() {
  const { api } = useConsole();
  const [status, setStatus] = useState<WorkerStatus | ''>('');
  // An ended worker's cost no longer moves: read once.
  const [endedCosts] = useState(() => new Map<string, number | undefined>());
  const { value, error } = usePolling(async () => {
    const page = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, ...(status ? { status } : {}) }));
    const running = page.items.filter((session) => session.status === 'running');
    const costOf = async (session: Session): Promise<number | undefined> => {
      if (endedCosts.has(session.worker_id)) return endedCosts.get(session.worker_id);
      // The cost so far is the latest progress event's (the sidecar reports the agent's running totals).
      const last = await api.request<ListResponseOf<StoredEvent<'progress'>>>(
        'GET',
        apiPaths.sdkEvents(session.worker_id, { before_id: 'end', types: 'progress', limit: 1 }),
      );
      const cost = (last.items[0]?.data as EventData<'progress'> | undefined)?.cost_usd;
      if (isEndedStatus(session.status)) endedCosts.set(session.worker_id, cost);
      return cost;
    };
    const [counts, costs] = await Promise.all([
      Promise.all(
        running.map(async (session) => {
          const open = await api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(session.worker_id, { state: 'open' }));
          return [session.worker_id, open.total] as const;
        }),
      ),
      Promise.all(page.items.filter((session) => session.status !== 'pending').map(async (session) => [session.worker_id, await costOf(session)] as const)),
    ]);
    return {
      sessions: page.items,
      openCounts: Object.fromEntries(counts) as Record<string, number>,
      costs: Object.fromEntries(costs) as Record<string, number | undefined>,
    };
  }, [api, status]);
  const sessions = value?.sessions;
  const openCounts = value?.openCounts ?? {};
  const costs = value?.costs ?? {};

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
              <th scope="col">Cost</th>
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
                <td>{costs[session.worker_id] === undefined ? <span aria-label="no cost reported yet">—</span> : formatCost(costs[session.worker_id]!)}</td>
                <td>{openCounts[session.worker_id] ? <span className="badge">{openCounts[session.worker_id]} open</span> : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** Starts a session from a template of the list the gateway gives (`GET /v1/templates`); a broken template is shown, not offered. */
function StartSession() {
  const { api } = useConsole();
  const [templates, setTemplates] = useState<TemplateSummary[]>();
  const [template, setTemplate] = useState('demo');
  const [prompt, setPrompt] = useState('');
  const chosen = templates?.find((item) => item.name === template);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    api
      .request<ListResponseOf<TemplateSummary>>('GET', apiPaths.templates)
      .then((list) => {
        setTemplates(list.items);
        const usable = list.items.filter((item) => !item.problem);
        if (!usable.some((item) => item.name === 'demo') && usable[0]) setTemplate(usable[0].name);
      })
      .catch((err: unknown) => setError(`could not list the templates: ${err instanceof Error ? err.message : String(err)}`));
  }, [api]);
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
        <select value={template} onChange={(event) => setTemplate(event.target.value)} required disabled={!templates}>
          {(templates ?? [{ name: template, description: '', autonomous: false }]).map((item) => (
            <option key={item.name} value={item.name} disabled={item.problem !== undefined}>
              {item.name}
              {item.problem ? ' (broken)' : item.autonomous ? ' (autonomous)' : ''}
            </option>
          ))}
        </select>
      </label>
      <label>
        First message (optional)
        <input value={prompt} placeholder={chosen?.prompt ?? ''} onChange={(event) => setPrompt(event.target.value)} />
      </label>
      <button type="submit" className="primary" disabled={busy || !templates}>
        Start session
      </button>
      {chosen?.description && <p className="template-description">{chosen.description}</p>}
      {templates?.some((item) => item.problem) && (
        <ul className="template-problems">
          {templates
            .filter((item) => item.problem)
            .map((item) => (
              <li key={item.name}>
                {item.name} cannot be used: {item.problem}
              </li>
            ))}
        </ul>
      )}
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
