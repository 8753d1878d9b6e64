import { EVENT_LIST_LIMIT, EventFollower, STREAM_CLOSE, type StoredEvent, type StreamFrame } from '@svc/protocol';
import type { WorkerView } from './worker-view.js';

/** What a transport reports about one connection to a worker's event stream. */
interface StreamListener {
  opened(): void;
  /** One text frame (a JSON `StreamFrame`). */
  frame(text: string): void;
  /**
   * The server refused the stream and will again: a 4xx on the upgrade (Node sees the status),
   * or the close code a browser gets instead (4000 + status). `message` says why.
   */
  refused(status: number, message: string): void;
  /** The connection ended (for whatever reason); the follower decides what next. */
  closed(code: number, reason: string): void;
}

/**
 * How a viewer reaches `GET /v1/workers/{id}/sdk-events/stream`: Node's `ws` in the CLI
 * (`@svc/viewer/ws`), the browser's WebSocket in the console. Each connection reports to its
 * listener and can be closed.
 */
export interface StreamTransport {
  open(afterId: string, listener: StreamListener): { close(code?: number, reason?: string): void };
}

export interface EventStreamOptions {
  view: WorkerView;
  transport: StreamTransport;
  /** Reads the worker's stored events after `afterId` (a page of `EVENT_LIST_LIMIT.max`): fills a hole, should frames skip an id. */
  read(afterId: string): Promise<readonly StoredEvent[]>;
  /** Waits before the n-th reconnect (default: 250 ms doubling to 10 s). */
  backoffMs?(attempt: number): number;
  /** The stream cannot go on (refused: a wrong token, a worker that is not there). */
  onFatal(message: string): void;
}

const defaultBackoffMs = (attempt: number) => Math.min(10_000, 250 * 2 ** (attempt - 1));

/**
 * Follows a worker's events into the view: the stored ones after the last id it has, then live
 * ones, through an `EventFollower` (the server sends them in order; a frame that skipped an id
 * would be refilled with `read`). When the connection drops it reconnects with backoff and
 * resumes after the last id it saw, saying so; a server restart (1012) is followed at once. A
 * refusal is fatal, except 429 and 5xx, which are waited out like a drop.
 */
export interface FollowedStream {
  close(): void;
  /**
   * The network is gone (a browser's `offline` event): the connection is dropped and nothing is
   * tried until `resume`. An open socket cannot be trusted across a network change (a browser
   * may keep it open and lose what arrives), so resuming always reconnects after the last id.
   */
  suspend(): void;
  /** The network is back (`online`): reconnect at once, after the last id the view holds. */
  resume(): void;
}

export function followEventStream(options: EventStreamOptions): FollowedStream {
  const { view } = options;
  const backoff = options.backoffMs ?? defaultBackoffMs;
  let connection: { close(code?: number, reason?: string): void } | undefined;
  let closedByUs = false;
  let suspended = false;
  let attempt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  function connect(): void {
    const resumeAfter = view.lastId;
    // The server replays after `resumeAfter` itself: the follower only keeps the frames in order.
    const follower = new EventFollower(resumeAfter, {
      read: options.read,
      pageSize: EVENT_LIST_LIMIT.max,
      deliver: (event) => void view.apply(event),
      onError: (err) => current.close(4000, `could not fill a hole in the events: ${(err as Error).message}`),
    });
    void follower.start({ replay: false });
    let ended = false;
    const current = options.transport.open(resumeAfter, {
      opened() {
        if (attempt > 0) view.notify(`reconnected; resumed after event #${resumeAfter}`, 'info');
        attempt = 0;
        view.setConnection({ kind: 'replaying' });
      },
      frame(text) {
        const frame = JSON.parse(text) as StreamFrame;
        if (frame.kind === 'event') follower.heard(frame.event);
        else view.setConnection({ kind: 'live' });
      },
      refused(status, message) {
        if (ended) return;
        ended = true;
        follower.stop();
        if (status === 429 || status >= 500) return retry(message);
        closedByUs = true;
        view.setConnection({ kind: 'closed', reason: message });
        options.onFatal(message);
      },
      closed(code, reason) {
        if (ended) return;
        ended = true;
        follower.stop();
        if (closedByUs || current !== connection) return;
        if (code === STREAM_CLOSE.serverRestart) {
          view.notify('the server is restarting; resuming', 'warn');
          attempt = 1;
          return connect();
        }
        retry(reason || `connection closed (${code})`);
      },
    });
    connection = current;
  }

  function retry(reason: string): void {
    if (closedByUs || suspended) return;
    attempt++;
    const inMs = backoff(attempt);
    view.setConnection({ kind: 'reconnecting', attempt, inMs, reason });
    timer = setTimeout(connect, inMs);
  }

  connect();
  return {
    close() {
      closedByUs = true;
      clearTimeout(timer);
      connection?.close();
    },
    suspend() {
      if (closedByUs || suspended) return;
      suspended = true;
      clearTimeout(timer);
      const dropped = connection;
      connection = undefined;
      dropped?.close(1000, 'offline');
      view.setConnection({ kind: 'offline' });
    },
    resume() {
      if (closedByUs || !suspended) return;
      suspended = false;
      // Counted as a reconnect, so the view says where it resumed.
      attempt = 1;
      connect();
    },
  };
}

/** The message of a refusal: the `APIError` body's, else the status. */
export function refusalMessage(status: number, body: string): string {
  try {
    const error = JSON.parse(body) as { code?: string; message?: string };
    if (error.message) return `${error.message} (${error.code})`;
  } catch {
    // Not an APIError body: the status says it.
  }
  return `HTTP ${status}`;
}
