import { useEffect, useState } from 'react';
import { apiPaths, type ListResponseOf, type Session, type StoredEvent, type Worker } from '@svc/protocol';
import { useConsole } from '../console-context.js';
import { Link } from '../router.js';
import { ApprovalCard } from '../widgets/ApprovalCard.js';

const REFRESH_MS = 2000;

interface OpenRequest {
  worker: Worker;
  request: StoredEvent<'control_request'>;
  deadline: number;
}

/** Every open request across the user's running workers, the nearest deadline first: the page a phone user lives on. */
export function InboxPage() {
  const { api } = useConsole();
  const [open, setOpen] = useState<OpenRequest[]>();
  const [error, setError] = useState<string>();

  useEffect(() => {
    let stopped = false;
    const load = async () => {
      try {
        const sessions = await api.request<ListResponseOf<Session>>('GET', apiPaths.sessions({ limit: 100, status: 'running' }));
        const perWorker = await Promise.all(
          sessions.items.map(async (session) => {
            const [worker, requests] = await Promise.all([
              api.request<Worker>('GET', apiPaths.worker(session.worker_id)),
              api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(session.worker_id, { state: 'open' })),
            ]);
            const timeoutMs = (worker.decision_policy?.decision_timeout_s ?? 600) * 1000;
            return requests.items.map((request) => ({ worker, request, deadline: Date.parse(request.ts) + timeoutMs }));
          }),
        );
        if (stopped) return;
        setOpen(perWorker.flat().sort((a, b) => a.deadline - b.deadline));
        setError(undefined);
      } catch (err) {
        if (!stopped) setError(err instanceof Error ? err.message : String(err));
      }
    };
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
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
