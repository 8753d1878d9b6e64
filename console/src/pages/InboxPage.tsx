import { apiPaths, type ListResponseOf, type Session, type Worker } from '@svc/protocol';
import { activityText } from '@svc/viewer';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { Link } from '../router.js';
import { usePolling } from '../use-polling.js';
import { newestActivityFirst } from '../waiting-workers.js';
import { InboxApprovals } from '../widgets/InboxApprovals.js';

interface WaitingConversation {
  session: Session;
  worker: Worker;
}

/**
 * What waits for the person: every open request they may decide now, across workers (`GET
 * /v1/approvals`), the nearest deadline first, decidable in place one by one or several at once;
 * then the conversations whose agent waits for a message (idle or suspended), the newest first.
 * The page a phone user lives on.
 */
export function InboxPage() {
  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Inbox</h1>
      <section aria-labelledby="approvals-title">
        <h2 id="approvals-title">Approvals</h2>
        <InboxApprovals />
      </section>
      <WaitingConversations />
    </section>
  );
}

/** The running conversations whose agent waits for a message: a worker waiting for a decision is in the approvals, by its requests. */
function WaitingConversations() {
  const { api } = useConsole();
  const { value, error } = usePolling(async () => {
    const sessions = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, status: 'running' }));
    const workers = await Promise.all(
      sessions.items.map(async (session): Promise<WaitingConversation> => ({
        session,
        worker: await api.request<Worker>('GET', apiPaths.worker(session.worker_id)),
      })),
    );
    return workers
      .filter(({ worker }) => worker.mode === 'conversation' && (worker.activity === 'idle' || worker.activity === 'suspended'))
      .sort((a, b) => newestActivityFirst(a.worker, b.worker));
  }, [api]);

  return (
    <section aria-labelledby="waiting-title">
      <h2 id="waiting-title">Waiting for you</h2>
      {error && <p role="alert">{error}</p>}
      {value === undefined ? (
        <p>Loading…</p>
      ) : value.length === 0 ? (
        <p>No conversation waits for a message.</p>
      ) : (
        <ul className="waiting">
          {value.map(({ session, worker }) => (
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
  );
}
