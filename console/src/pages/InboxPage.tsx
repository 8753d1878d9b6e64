import { apiPaths, DEFAULT_DECISION_POLICY, type ListResponseOf, type Session, type StoredEvent, type Worker } from '@svc/protocol';
import { activityText } from '@svc/viewer';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { Link } from '../router.js';
import { usePolling } from '../use-polling.js';
import { newestActivityFirst } from '../waiting-workers.js';
import { ApprovalCard } from '../widgets/ApprovalCard.js';

interface OpenRequest {
  worker: Worker;
  request: StoredEvent<'control_request'>;
  deadline: number;
}

interface WaitingConversation {
  session: Session;
  worker: Worker;
}

/**
 * What waits for the person across their running workers: every open request, the nearest
 * deadline first, decidable in place; then the conversations whose agent waits for a message
 * (idle or suspended), the newest first. The page a phone user lives on.
 */
export function InboxPage() {
  const { api } = useConsole();
  const { value, error } = usePolling(async () => {
    const sessions = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, status: 'running' }));
    const perWorker = await Promise.all(
      sessions.items.map(async (session) => {
        const [worker, requests] = await Promise.all([
          api.request<Worker>('GET', apiPaths.worker(session.worker_id)),
          api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(session.worker_id, { state: 'open' })),
        ]);
        const timeoutMs = (worker.decision_policy ?? DEFAULT_DECISION_POLICY).decision_timeout_s * 1000;
        return { session, worker, open: requests.items.map((request): OpenRequest => ({ worker, request, deadline: Date.parse(request.ts) + timeoutMs })) };
      }),
    );
    return {
      open: perWorker.flatMap((one) => one.open).sort((a, b) => a.deadline - b.deadline),
      // A worker waiting for a decision is in the list above, by its requests.
      waiting: perWorker
        .filter(({ worker }) => worker.mode === 'conversation' && (worker.activity === 'idle' || worker.activity === 'suspended'))
        .map(({ session, worker }): WaitingConversation => ({ session, worker }))
        .sort((a, b) => newestActivityFirst(a.worker, b.worker)),
    };
  }, [api]);

  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Inbox</h1>
      {error && <p role="alert">{error}</p>}
      <section aria-labelledby="approvals-title">
        <h2 id="approvals-title">Approvals</h2>
        {value === undefined ? (
          <p>Loading…</p>
        ) : value.open.length === 0 ? (
          <p>Nothing waits for a decision.</p>
        ) : (
          <ul className="inbox">
            {value.open.map(({ worker, request }) => (
              <li key={`${worker.worker_id}:${request.data.request_id}`}>
                <p className="from">
                  <Link href={`/workers/${worker.worker_id}`}>{worker.worker_id}</Link>
                </p>
                <ApprovalCard workerId={worker.worker_id} request={request} policy={worker.decision_policy} />
              </li>
            ))}
          </ul>
        )}
      </section>
      <section aria-labelledby="waiting-title">
        <h2 id="waiting-title">Waiting for you</h2>
        {value === undefined ? (
          <p>Loading…</p>
        ) : value.waiting.length === 0 ? (
          <p>No conversation waits for a message.</p>
        ) : (
          <ul className="waiting">
            {value.waiting.map(({ session, worker }) => (
              <li key={worker.worker_id}>
                <Link href={`/workers/${worker.worker_id}`}>{worker.worker_id}</Link>
                <span className={`activity activity-${worker.activity}`}>{activityText(worker.activity!)}</span>
                <span className="since">
                  {worker.activity_at ? `for ${formatAge(worker.activity_at)} · ` : ''}
                  {session.template}
                </span>
              </li>
            ))}
          </ul>
        )}
      </section>
    </section>
  );
}
