import type WebSocket from 'ws';
import { EVENT_LIST_LIMIT, EventFollower, STREAM_CLOSE, type StoredEvent, type StreamFrame } from '@svc/protocol';
import type { AttachModel } from './model.js';

export interface EventStreamOptions {
  model: AttachModel;
  /** Opens the WebSocket of the worker's stream after `afterId`. */
  open(afterId: string): WebSocket;
  /** Reads the worker's stored events after `afterId` (a page of `EVENT_LIST_LIMIT.max`): fills a hole, should frames skip an id. */
  read(afterId: string): Promise<readonly StoredEvent[]>;
  /** Waits before the n-th reconnect (default: 250 ms doubling to 10 s). */
  backoffMs?(attempt: number): number;
  /** The stream cannot go on (refused: a wrong token, a worker that is not there). */
  onFatal(message: string): void;
}

export const defaultBackoffMs = (attempt: number) => Math.min(10_000, 250 * 2 ** (attempt - 1));

/**
 * Follows a worker's events into the model: the stored ones after the last id it has, then
 * live ones, through an `EventFollower` (the server sends them in order; a frame that skipped an
 * id would be refilled with `read`). When the connection drops it reconnects with backoff and
 * resumes after the last id it saw, saying so; a server restart (1012) is followed at once. A
 * refusal (HTTP 4xx on the upgrade) is fatal.
 */
export function followEventStream(options: EventStreamOptions): { close(): void } {
  const { model } = options;
  const backoff = options.backoffMs ?? defaultBackoffMs;
  let socket: WebSocket | undefined;
  let closedByUs = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;

  function connect(): void {
    const resumeAfter = model.lastId;
    const current = options.open(resumeAfter);
    socket = current;
    // The server replays after `resumeAfter` itself: the follower only keeps the frames in order.
    const follower = new EventFollower(resumeAfter, {
      read: options.read,
      pageSize: EVENT_LIST_LIMIT.max,
      deliver: (event) => void model.apply(event),
      onError: (err) => current.close(4000, `could not fill a hole in the events: ${(err as Error).message}`),
    });
    void follower.start({ replay: false });
    current.on('open', () => {
      if (attempt > 0) model.notify(`reconnected; resumed after event #${resumeAfter}`, 'info');
      attempt = 0;
      model.setConnection({ kind: 'replaying' });
    });
    current.on('message', (data) => {
      const frame = JSON.parse(String(data)) as StreamFrame;
      if (frame.kind === 'event') follower.heard(frame.event);
      else model.setConnection({ kind: 'live' });
    });
    current.on('unexpected-response', (request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => {
        request.destroy();
        const status = response.statusCode ?? 0;
        let message = `HTTP ${status}`;
        try {
          const error = JSON.parse(body) as { code?: string; message?: string };
          if (error.message) message = `${error.message} (${error.code})`;
        } catch {
          // Not an APIError body: the status says it.
        }
        if (status === 429 || status >= 500) return retry(message);
        closedByUs = true;
        model.setConnection({ kind: 'closed', reason: message });
        options.onFatal(message);
      });
    });
    current.on('error', () => {
      // 'close' follows and decides.
    });
    current.on('close', (code, reason) => {
      follower.stop();
      if (closedByUs || current !== socket) return;
      if (code === STREAM_CLOSE.serverRestart) {
        model.notify('the server is restarting; resuming', 'warn');
        attempt = 1;
        return connect();
      }
      retry(reason.toString() || `connection closed (${code})`);
    });
  }

  function retry(reason: string): void {
    if (closedByUs) return;
    attempt++;
    const inMs = backoff(attempt);
    model.setConnection({ kind: 'reconnecting', attempt, inMs, reason });
    timer = setTimeout(connect, inMs);
  }

  connect();
  return {
    close() {
      closedByUs = true;
      clearTimeout(timer);
      socket?.close();
    },
  };
}
