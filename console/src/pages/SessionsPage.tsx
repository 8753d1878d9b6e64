import { useEffect, useState, type FormEvent } from 'react';
import { activityText, formatCost } from '@svc/viewer';
import {
  apiPaths,
  isEndedStatus,
  WORKER_STATUSES,
  type EventData,
  type ListResponseOf,
  type Session,
  type SessionWorkspace,
  type StoredEvent,
  type TemplateSummary,
  type Worker,
  type WorkerActivity,
  type WorkerStatus,
} from '@svc/protocol';
import { ApiError } from '../api.js';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { Link, navigate } from '../router.js';
import { usePolling } from '../use-polling.js';
import { newestActivityFirst, WAITING_ACTIVITIES } from '../waiting-workers.js';
import { pullRequestName, repositoryName, sessionChangesText, webLink } from '../workspace-changes.js';

/** Which sessions the list shows: all, those of one status, or the running ones whose agent waits for the person. */
type SessionFilter = WorkerStatus | '' | 'waiting';

/** A running session's worker as the list last read it, and how many of its requests are open. */
interface RunningWorker {
  worker: Worker;
  openCount: number;
}

/**
 * Every session the user may see, newest first, with its agent's activity, its cost and open
 * approvals (or only those waiting for the person, the latest to start waiting first); a form to start one.
 */
export function SessionsPage() {
  const { api } = useConsole();
  const [filter, setFilter] = useState<SessionFilter>('');
  // An ended worker's cost no longer moves: read once.
  const [endedCosts] = useState(() => new Map<string, number | undefined>());
  const { value, error } = usePolling(async () => {
    const status = filter === 'waiting' ? 'running' : filter;
    const page = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, ...(status ? { status } : {}) }));
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
    const [live, costs] = await Promise.all([
      // What a running worker's agent is doing, and its open requests, move on their own.
      Promise.all(
        page.items
          .filter((session) => session.status === 'running')
          .map(async (session) => {
            const [worker, open] = await Promise.all([
              api.request<Worker>('GET', apiPaths.worker(session.worker_id)),
              api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(session.worker_id, { state: 'open' })),
            ]);
            return [session.worker_id, { worker, openCount: open.total }] as const;
          }),
      ),
      Promise.all(page.items.filter((session) => session.status !== 'pending').map(async (session) => [session.worker_id, await costOf(session)] as const)),
    ]);
    const running = Object.fromEntries(live) as Record<string, RunningWorker | undefined>;
    const workerOf = (session: Session): Pick<Worker, 'activity' | 'activity_at'> => running[session.worker_id]?.worker ?? {};
    return {
      sessions:
        filter === 'waiting'
          ? page.items.filter((session) => WAITING_ACTIVITIES.has(workerOf(session).activity)).sort((a, b) => newestActivityFirst(workerOf(a), workerOf(b)))
          : page.items,
      running,
      costs: Object.fromEntries(costs) as Record<string, number | undefined>,
    };
  }, [api, filter]);
  const sessions = value?.sessions;
  const running = value?.running ?? {};
  const costs = value?.costs ?? {};
  // Only a list with a session on a repository has the column: most have none.
  const withRepositories = sessions?.some((session) => session.workspace) ?? false;

  return (
    <section aria-labelledby="sessions-title">
      <header className="page-header">
        <h1 id="sessions-title">Sessions</h1>
        <label>
          Show
          <select value={filter} onChange={(event) => setFilter(event.target.value as SessionFilter)}>
            <option value="">all</option>
            <option value="waiting">waiting for you</option>
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
        <p>{filter === 'waiting' ? 'No session waits for you.' : `No sessions${filter ? ` ${filter}` : ''} yet.`}</p>
      ) : (
        <table className="sessions">
          <thead>
            <tr>
              <th scope="col">Worker</th>
              <th scope="col">Status</th>
              <th scope="col">Template</th>
              {withRepositories && <th scope="col">Repository</th>}
              <th scope="col">Owner</th>
              <th scope="col">Age</th>
              <th scope="col">Cost</th>
              <th scope="col">Approvals</th>
            </tr>
          </thead>
          <tbody>
            {sessions.map((session) => {
              const live = running[session.worker_id];
              const activity = live?.worker.activity;
              return (
                <tr key={session.id}>
                  <td>
                    <Link href={`/workers/${session.worker_id}`}>{session.worker_id}</Link>
                  </td>
                  <td>
                    <span className={`status status-${session.status}`}>{session.status}</span>
                    {activity && (
                      <>
                        {' '}
                        <ActivityBadge activity={activity} since={live?.worker.activity_at} />
                      </>
                    )}
                    {session.failure && (
                      <span className="failure">
                        {' '}
                        ({session.failure.step}: {session.failure.reason})
                      </span>
                    )}
                  </td>
                  <td>{session.template}</td>
                  {withRepositories && <td>{session.workspace && <SessionRepository workspace={session.workspace} />}</td>}
                  <td>{session.owner}</td>
                  <td>{formatAge(session.created_at)}</td>
                  <td>{costs[session.worker_id] === undefined ? <span aria-label="no cost reported yet">—</span> : formatCost(costs[session.worker_id]!)}</td>
                  <td>{live?.openCount ? <span className="badge">{live.openCount} open</span> : ''}</td>
                </tr>
              );
            })}
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

/** What a running worker's agent is doing, in words, and for how long when it waits for the person. */
function ActivityBadge({ activity, since }: { activity: WorkerActivity; since: string | undefined }) {
  return (
    <span className={`activity activity-${activity}`}>
      {activityText(activity)}
      {since && WAITING_ACTIVITIES.has(activity) ? `, for ${formatAge(since)}` : ''}
    </span>
  );
}

/** A session's repository in one cell: its short name and branch, then how much changed and its pull request. */
function SessionRepository({ workspace }: { workspace: SessionWorkspace }) {
  const changes = sessionChangesText(workspace);
  const pullRequest = workspace.pull_request_url && webLink(workspace.pull_request_url);
  return (
    <span className="session-repository">
      <span>
        <span title={workspace.repo}>{repositoryName(workspace.repo)}</span> <code>{workspace.branch}</code>
      </span>
      {(changes || pullRequest) && (
        <span className="since">
          {changes}
          {changes && pullRequest && ' · '}
          {pullRequest && (
            <a href={pullRequest} target="_blank" rel="noopener noreferrer">
              {pullRequestName(pullRequest)}
            </a>
          )}
        </span>
      )}
    </span>
  );
}
