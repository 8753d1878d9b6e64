import { lazy, Suspense, useEffect, useState } from 'react';
import {
  apiPaths,
  EVENT_LIST_LIMIT,
  isEndedStatus,
  routeDeciders,
  routeOf,
  WORKER_POLICY_SOURCE,
  type ListResponseOf,
  type StoredEvent,
  type Worker,
} from '@svc/protocol';
import {
  activityText,
  earlierPages,
  followEventStream,
  formatCost,
  formatCount,
  openAtEnd,
  WorkerView,
  type FollowedStream,
  type HistoryReader,
} from '@svc/viewer';
import { useWorkerView } from '@svc/viewer/react';
import { ApiError, type Api } from '../api.js';
import { tokenSubject } from '../auth.js';
import { browserTransport } from '../browser-transport.js';
import { useConsole } from '../console-context.js';
import { AccessPanel } from '../widgets/AccessPanel.js';
import { ApprovalCard } from '../widgets/ApprovalCard.js';
import { EventList } from '../widgets/EventList.js';
import type { RouteShown } from '../widgets/RouteNote.js';
import { MessageBox } from '../widgets/MessageBox.js';
import { SandboxLogs } from '../widgets/SandboxLogs.js';
import { tabIds, Tabs, type Tab } from '../widgets/Tabs.js';
import { NotFoundPage } from './NotFoundPage.js';

// The diff viewer and its highlighting load when the tab first opens: most workers have no repository.
const ChangesPanel = lazy(() => import('../widgets/ChangesPanel.js').then((module) => ({ default: module.ChangesPanel })));
// xterm.js too: few people open a terminal.
const TerminalPanel = lazy(() => import('../widgets/TerminalPanel.js').then((module) => ({ default: module.TerminalPanel })));

type WorkerTab = 'events' | 'logs' | 'changes' | 'access' | 'terminal';

/** How many approval cards stay on the page, open or recently closed. */
const SHOWN_CARDS = 10;
/** How long a request stays open before it gets a card: longer than a render interval (33 ms), too short for a person to notice. */
const CARD_DELAY_MS = 60;

/** A worker: its live events and open approvals, its sandbox logs, a conversation's message box; read-only once it has ended. */
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

/** The worker's history as the view reads it: pages backwards through the events API, and its open requests. */
function historyReader(api: Api, workerId: string): HistoryReader {
  return {
    before: async (beforeId, limit) =>
      (await api.request<ListResponseOf<StoredEvent>>('GET', apiPaths.sdkEvents(workerId, { before_id: beforeId, limit }))).items,
    openRequests: async () =>
      (await api.request<ListResponseOf<StoredEvent<'control_request'>>>('GET', apiPaths.controlRequests(workerId, { state: 'open' }))).items,
    activity: async () => (await api.request<Worker>('GET', apiPaths.worker(workerId))).activity,
  };
}

function WorkerEvents({ worker }: { worker: Worker }) {
  const { api, auth } = useConsole();
  const workerId = worker.worker_id;
  // One view per page: the page is keyed by worker, so a new worker is a new page.
  const [view] = useState(() => new WorkerView({ readOnly: isEndedStatus(worker.status) }));
  useWorkerView(view);
  const [fatal, setFatal] = useState<string>();
  const [tab, setTab] = useState<WorkerTab>('events');
  // Once shown, the Terminal tab's panel stays on the page, hidden behind the others: a look at the events does not end the shell.
  const [terminalShown, setTerminalShown] = useState(false);
  const selectTab = (next: WorkerTab) => {
    setTab(next);
    if (next === 'terminal') setTerminalShown(true);
  };
  const [readEarlier] = useState(() => earlierPages(view, historyReader(api, workerId), EVENT_LIST_LIMIT.max));

  useEffect(() => {
    // A long history opens at its end (its last page); the stream follows from there, earlier
    // pages are read as the person scrolls up.
    let stream: FollowedStream | undefined;
    let closed = false;
    // The browser knows when the network goes and comes back: drop the stream, and resume at once.
    const offline = () => stream?.suspend();
    const online = () => stream?.resume();
    window.addEventListener('offline', offline);
    window.addEventListener('online', online);
    openAtEnd(view, historyReader(api, workerId))
      .then(() => {
        if (closed) return;
        stream = followEventStream({
          view,
          transport: browserTransport(
            (afterId) => apiPaths.eventStream(workerId, afterId),
            () => auth.signedIn?.token,
          ),
          read: async (afterId) =>
            (await api.request<ListResponseOf<StoredEvent>>('GET', apiPaths.sdkEvents(workerId, { after_id: afterId, limit: EVENT_LIST_LIMIT.max }))).items,
          onFatal: setFatal,
        });
      })
      .catch((err: unknown) => !closed && setFatal(`could not read the history: ${err instanceof Error ? err.message : String(err)}`));
    return () => {
      closed = true;
      window.removeEventListener('offline', offline);
      window.removeEventListener('online', online);
      stream?.close();
    };
  }, [api, auth, view, workerId]);

  useEffect(() => {
    if (isEndedStatus(worker.status)) view.setReadOnly(`the worker is ${worker.status}`);
  }, [view, worker.status]);

  // A card stays once its request is closed (here, elsewhere, or withdrawn), saying how, so a
  // person who was about to decide sees who did; the newest few are kept. A request the
  // sidecar's rules answered at once asked nobody: it gets no card. Its answer comes in the same
  // POST, but as a frame of its own, and a render can fall between the two frames: so a request
  // becomes a card only once it has been open for CARD_DELAY_MS (seen at a later render, which
  // a timer brings about when nothing else changes).
  const [cards] = useState(() => new Map<string, StoredEvent<'control_request'>>());
  const [openSince] = useState(() => new Map<string, number>());
  const [, setRecheck] = useState(0);
  let awaitingCard = false;
  if (view.connection.kind === 'live') {
    const now = performance.now();
    const open = view.openRequests();
    const openIds = new Set(open.map((request) => request.data.request_id));
    for (const id of openSince.keys()) if (!openIds.has(id)) openSince.delete(id);
    for (const request of open) {
      const id = request.data.request_id;
      const since = openSince.get(id) ?? now;
      openSince.set(id, since);
      if (cards.has(id) || now - since >= CARD_DELAY_MS) cards.set(id, request);
      else awaitingCard = true;
    }
  }
  useEffect(() => {
    if (!awaitingCard) return;
    const timer = setTimeout(() => setRecheck((n) => n + 1), CARD_DELAY_MS);
    return () => clearTimeout(timer);
  });
  const shownCards = [...cards.values()].filter((request) => view.closingOf(request.data.request_id)?.source !== WORKER_POLICY_SOURCE).slice(-SHOWN_CARDS);
  const usage = worker.model_usage;
  const ended = view.readOnly || isEndedStatus(worker.status);
  const signedIn = auth.signedIn;
  return (
    <section aria-labelledby="worker-title" className="worker">
      <header className="page-header">
        <h1 id="worker-title">{workerId}</h1>
        <span className={`status status-${worker.status}`}>{worker.status}</span>
        {view.activity && !isEndedStatus(worker.status) && <span className={`activity activity-${view.activity}`}>{activityText(view.activity)}</span>}
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
                route={routeShown(worker, request)}
                closing={view.closingOf(request.data.request_id)}
                onDecided={() => view.decided(request.data.request_id)}
              />
            ))}
          </section>
        )
      )}
      <Tabs label="What to show" tabs={tabsOf(worker, terminalShown)} selected={tab} onSelect={selectTab} />
      {tab !== 'terminal' && (
        <div role="tabpanel" id={tabIds(tab).panel} aria-labelledby={tabIds(tab).tab} className="panel">
          {tab === 'events' && (
            <>
              <EventList view={view} readEarlier={readEarlier} you={signedIn && tokenSubject(signedIn.token)} />
              {view.notices.length > 0 && (
                <ul className="notices">
                  {view.notices.map((notice, index) => (
                    <li key={index} className={`notice ${notice.level}`}>
                      {notice.text}
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
          {tab === 'logs' &&
            (worker.session_id ? <SandboxLogs sessionId={worker.session_id} /> : <p>This worker has no session, so no sandbox of svc's: no logs here.</p>)}
          {tab === 'changes' && (
            <Suspense fallback={<p>Loading the changes…</p>}>
              <ChangesPanel workerId={workerId} />
            </Suspense>
          )}
          {tab === 'access' && worker.session_id && <AccessPanel worker={worker} sessionId={worker.session_id} />}
        </div>
      )}
      {terminalShown && (
        <div role="tabpanel" id={tabIds('terminal').panel} aria-labelledby={tabIds('terminal').tab} className="panel" hidden={tab !== 'terminal'}>
          <Suspense fallback={<p>Loading the terminal…</p>}>
            <TerminalPanel workerId={workerId} ended={ended} />
          </Suspense>
        </div>
      )}
      {!ended &&
        (worker.mode === 'conversation' ? (
          <MessageBox workerId={workerId} activity={view.activity} />
        ) : (
          <p className="no-messages">This session runs its first prompt only: it takes no messages.</p>
        ))}
    </section>
  );
}

/**
 * Who may decide a request of this worker when its template routes it (docs/teams.md): the first
 * route that matches. The page does not follow escalations or votes; the inbox shows them.
 */
function routeShown(worker: Worker, request: StoredEvent<'control_request'>): RouteShown | undefined {
  const route = routeOf(worker.approvals, { tool_name: request.data.tool_name, input: request.data.input })?.route;
  return route && { rule: route.match, deciders: routeDeciders(route, false), quorum: route.quorum ?? 1 };
}

/**
 * The worker's tabs: its changes only when it has a repository (docs/workspace.md); its
 * session's access list when it has a session (docs/teams.md); a terminal
 * while it runs, and after it ended if one was shown (what it last showed is still there).
 */
function tabsOf(worker: Worker, terminalShown: boolean): Array<Tab<WorkerTab>> {
  return [
    { id: 'events', label: 'Events' },
    { id: 'logs', label: 'Sandbox logs' },
    ...(worker.workspace ? [{ id: 'changes', label: 'Changes' } as const] : []),
    ...(worker.session_id ? [{ id: 'access', label: 'Access' } as const] : []),
    ...(!isEndedStatus(worker.status) || terminalShown ? [{ id: 'terminal', label: 'Terminal' } as const] : []),
  ];
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
    case 'offline':
      return 'offline: waiting for the network';
    case 'closed':
      return `closed: ${connection.reason}`;
  }
}
