import { apiPaths, DEFAULT_DECISION_POLICY, type ListResponseOf, type Session, type StoredEvent, type Worker } from '@svc/protocol';
import { useConsole } from '../console-context.js';
import { Link } from '../router.js';
import { usePolling } from '../use-polling.js';
import { ApprovalCard } from '../widgets/ApprovalCard.js';

interface OpenRequest {
  worker: Worker;
  request: StoredEvent<'control_request'>;
  deadline: number;
}

/** Every open request across the user's running workers, the nearest deadline first: the page a phone user lives on. */
export function InboxPage() {
  const { api } = useConsole();
  const { value: open, error } = usePolling(async () => {
    const sessions = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, status: 'running' }));
    const perWorker = await Promise.all(
      sessions.items.map(async (session) => {
        const [worker, requests] = await Promise.all([
          api.request<Worker>('GET', apiPaths.worker(session.worker_id)),
          api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(session.worker_id, { state: 'open' })),
        ]);
        const timeoutMs = (worker.decision_policy ?? DEFAULT_DECISION_POLICY).decision_timeout_s * 1000;
        return requests.items.map((request): OpenRequest => ({ worker, request, deadline: Date.parse(request.ts) + timeoutMs }));
      }),
    );
    return perWorker.flat().sort((a, b) => a.deadline - b.deadline);
  }, [api]);

  return (
    <section aria-labelledby="inbox-title">
      <h1 id="inbox-title">Approvals</h1>
      {error && <p role="alert">{error}</p>}
      {open === undefined ? (
        <p>Loading…</p>
      ) : open.length === 0 ? (
        <p>Nothing waits for a decision.</p>
      ) : (
        <ul className="inbox">
          {open.map(({ worker, request }) => (
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
  );
}
