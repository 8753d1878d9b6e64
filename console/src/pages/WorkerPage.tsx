import { useEffect, useState } from 'react';
import { apiPaths, EVENT_LIST_LIMIT, isEndedStatus, type ListResponseOf, type StoredEvent, type Worker } from '@svc/protocol';
import { followEventStream, formatCost, formatCount, WorkerView } from '@svc/viewer';
import { useWorkerView } from '@svc/viewer/react';
import { ApiError } from '../api.js';
import { browserTransport } from '../browser-transport.js';
import { useConsole } from '../console-context.js';
import { ApprovalCard } from '../widgets/ApprovalCard.js';
import { EventRow } from '../widgets/EventRow.js';
import { NotFoundPage } from './NotFoundPage.js';

/** How many of the newest events the page draws (a long history is not all in the DOM). */
const SHOWN_EVENTS = 500;
/** How many approval cards stay on the page, open or recently closed. */
const SHOWN_CARDS = 10;

/** A worker: its live events and open approvals; read-only once it has ended. */
export function WorkerPage({ workerId }: { workerId: string }) {
  const { api } = useConsole();
  const [worker, setWorker] = useState<Worker>();
  const [failure, setFailure] = useState<ApiError>();

  useEffect(() => {
    let stopped = false;
    const load = () =>
      api
        .request<Worker>('GET', apiPaths.worker(workerId))
        .then((latest) => !stopped && setWorker(latest))
        .catch((err: unknown) => !stopped && err instanceof ApiError && setFailure(err));
    void load();
    // Status and usage move on their own; the events come over the stream.
    const timer = setInterval(load, 2000);
    return () => {
      stopped = true;
      clearInterval(timer);
    };
  }, [api, workerId]);

  if (failure?.code === 'worker_not_found') return <NotFoundPage what={`No worker ${workerId} here, or it is not yours.`} />;
  if (failure && !worker) return <p role="alert">{failure.message}</p>;
  if (!worker) return <p>Loading {workerId}…</p>;
  return <WorkerEvents worker={worker} />;
}

function WorkerEvents({ worker }: { worker: Worker }) {
  const { api, auth } = useConsole();
  const workerId = worker.worker_id;
  // One view per page: the page is keyed by worker, so a new worker is a new page.
  const [view] = useState(() => new WorkerView({ readOnly: isEndedStatus(worker.status) }));
  useWorkerView(view);
  const [fatal, setFatal] = useState<string>();

  useEffect(() => {
    const stream = followEventStream({
      view,
      transport: browserTransport(
        (afterId) => apiPaths.eventStream(workerId, afterId),
        () => auth.signedIn?.token,
      ),
      read: async (afterId) =>
        (await api.request<ListResponseOf<StoredEvent>>('GET', apiPaths.sdkEvents(workerId, { after_id: afterId, limit: EVENT_LIST_LIMIT.max }))).items,
      onFatal: setFatal,
    });
    return () => stream.close();
  }, [api, auth, view, workerId]);

  useEffect(() => {
    if (isEndedStatus(worker.status)) view.setReadOnly(`the worker is ${worker.status}`);
  }, [view, worker.status]);

  // A card stays once its request is closed (here, elsewhere, or withdrawn), saying how, so a
  // person who was about to decide sees who did; the newest few are kept.
  const [cards] = useState(() => new Map<string, StoredEvent<'control_request'>>());
  // Only once live: while the history replays, requests long decided are briefly open.
  if (view.connection.kind === 'live') for (const request of view.openRequests()) cards.set(request.data.request_id, request);
  const shownCards = [...cards.values()].slice(-SHOWN_CARDS);
  const shown = view.events.slice(-SHOWN_EVENTS);
  const usage = worker.model_usage;
  return (
    <section aria-labelledby="worker-title" className="worker">
      <header className="page-header">
        <h1 id="worker-title">{workerId}</h1>
        <span className={`status status-${worker.status}`}>{worker.status}</span>
        <span className="connection" role="status">
          {connectionText(view.connection)}
        </span>
        {view.progress && (
          <span className="usage">
            {formatCount(view.progress.input_tokens + view.progress.output_tokens)} tokens · {formatCost(view.progress.cost_usd)}
          </span>
        )}
        {!view.progress && usage && <span className="usage">{formatCost(usage.cost_usd)}</span>}
      </header>
      {fatal && <p role="alert">{fatal}</p>}
      {view.readOnly ? (
        <p className="read-only">Read-only: this worker has ended; nothing can be decided.</p>
      ) : (
        shownCards.length > 0 && (
          <section aria-label="Approvals" className="approvals">
            {shownCards.map((request) => (
              <ApprovalCard
                key={request.data.request_id}
                workerId={workerId}
                request={request}
                policy={worker.decision_policy}
                closing={view.closingOf(request.data.request_id)}
                onDecided={() => view.decided(request.data.request_id)}
              />
            ))}
          </section>
        )
      )}
      <ol className="events" aria-label="Events" aria-live="polite">
        {view.events.length > shown.length && <li className="earlier">{formatCount(view.events.length - shown.length)} earlier events not shown</li>}
        {shown.map((event) => (
          <li key={event.id} data-event-id={event.id}>
            <EventRow event={event} />
          </li>
        ))}
      </ol>
      {view.notices.length > 0 && (
        <ul className="notices">
          {view.notices.map((notice, index) => (
            <li key={index} className={`notice ${notice.level}`}>
              {notice.text}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function connectionText(connection: WorkerView['connection']): string {
  switch (connection.kind) {
    case 'connecting':
      return 'connecting…';
    case 'replaying':
      return 'catching up…';
    case 'live':
      return 'live';
    case 'reconnecting':
      return `reconnecting in ${Math.ceil(connection.inMs / 1000)} s (attempt ${connection.attempt})`;
    case 'closed':
      return `closed: ${connection.reason}`;
  }
}
