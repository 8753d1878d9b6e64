import WebSocket from 'ws';
import type { ListResponseOf, StoredEvent, StreamFrame } from '@svc/protocol';
import { failedAnswer, type FailedAnswer } from './answers.js';

/** How long a viewer waits before opening a closed stream again (as `svc attach` does, with back-off). */
const REOPEN_PAUSE_MS = 200;
/** How long a poller waits before asking again after a 5xx (or no answer). */
const POLL_RETRY_PAUSE_MS = 100;
/** How long a poller that got an empty page waits before asking again. */
const IDLE_POLL_MS = 25;

/**
 * What one reader (a WebSocket viewer or a poller) has received, per worker. Every event is
 * checked as it arrives: ids are 1, 2, 3… per worker, so anything but "last id + 1" is a
 * duplicate, a gap or a reordering, and is recorded as a violation.
 */
export class ReceivedEvents {
  readonly byWorker = new Map<string, StoredEvent[]>();
  readonly violations: string[] = [];

  constructor(readonly name: string) {}

  add(workerId: string, event: StoredEvent): void {
    const received = this.byWorker.get(workerId) ?? [];
    const expected = String(received.length + 1);
    if (event.id !== expected) this.violations.push(`${this.name} ${workerId}: got id ${event.id}, expected ${expected}`);
    received.push(event);
    this.byWorker.set(workerId, received);
  }

  lastId(workerId: string): string {
    return this.byWorker.get(workerId)?.at(-1)?.id ?? '0';
  }

  count(workerId: string): number {
    return this.byWorker.get(workerId)?.length ?? 0;
  }
}

/** A viewer of several workers: one WebSocket per worker, as the terminal UI opens them. */
export class StreamViewer {
  readonly received: ReceivedEvents;
  /** How many times a stream that closed was opened again (with `reconnect`). */
  reconnects = 0;
  private readonly sockets = new Map<string, WebSocket>();
  private closing = false;

  constructor(
    name: string,
    private readonly gatewayUrl: string,
    private readonly token: string,
    /** `reconnect`: a stream that closes (the gateway went away) is opened again after the last id seen, as `svc attach` does. */
    private readonly options: { reconnect?: boolean } = {},
  ) {
    this.received = new ReceivedEvents(name);
  }

  /** Opens (or re-opens) the stream of each worker after the last id this viewer saw. */
  async watch(workerIds: string[]): Promise<void> {
    this.closing = false;
    await Promise.all(workerIds.map((workerId) => this.open(workerId)));
  }

  /** Opens the stream again after a pause, until it opens (or the viewer disconnects). */
  private reopen(workerId: string): void {
    if (this.closing) return;
    this.reconnects++;
    setTimeout(() => void this.open(workerId).catch(() => this.reopen(workerId)), REOPEN_PAUSE_MS);
  }

  private open(workerId: string): Promise<void> {
    const url = `${this.gatewayUrl.replace(/^http/, 'ws')}/v1/workers/${workerId}/sdk-events/stream?after_id=${this.received.lastId(workerId)}`;
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${this.token}` } });
    this.sockets.set(workerId, socket);
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as StreamFrame;
      if (frame.kind === 'event') this.received.add(workerId, frame.event);
    });
    return new Promise((resolve, reject) => {
      socket.once('open', () => {
        if (this.options.reconnect) socket.once('close', () => this.reopen(workerId));
        resolve();
      });
      socket.once('unexpected-response', (request, response) => {
        request.destroy();
        reject(new Error(`${this.received.name}: the stream of ${workerId} answered HTTP ${response.statusCode}`));
      });
      socket.once('error', reject);
    });
  }

  /** Closes every stream and waits until each is closed: a viewer dropping off mid-stream. */
  async disconnect(): Promise<void> {
    this.closing = true;
    const closing = [...this.sockets.values()].map(
      (socket) => new Promise<void>((resolve) => (socket.readyState === WebSocket.CLOSED ? resolve() : socket.once('close', () => resolve()))),
    );
    for (const socket of this.sockets.values()) socket.close();
    await Promise.all(closing);
    this.sockets.clear();
  }
}

/** A poller of several workers: `GET …/sdk-events?after_id=<last>` in a loop per worker until told to stop. */
export class Poller {
  readonly received: ReceivedEvents;
  /** Polls answered 503/504 (no event-ingest replica could answer) and asked again. */
  retried = 0;
  /** Every poll that was not answered 200 (or not answered at all: status 0). */
  readonly failures: FailedAnswer[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];

  constructor(
    name: string,
    private readonly gatewayUrl: string,
    private readonly token: string,
  ) {
    this.received = new ReceivedEvents(name);
  }

  poll(workerIds: string[], until: (workerId: string) => boolean): void {
    this.loops = workerIds.map(async (workerId) => {
      while (!this.stopped && !until(workerId)) {
        const started = Date.now();
        const response = await fetch(`${this.gatewayUrl}/v1/workers/${workerId}/sdk-events?after_id=${this.received.lastId(workerId)}&limit=1000`, {
          headers: { authorization: `Bearer ${this.token}` },
        }).catch(() => undefined);
        // A real client waits and asks again when the gateway, or a replica behind it, cannot answer for a moment.
        if (!response || response.status >= 500) {
          this.failures.push(await failedAnswer(response, started));
          this.retried++;
          await new Promise((resolve) => setTimeout(resolve, POLL_RETRY_PAUSE_MS));
          continue;
        }
        if (response.status !== 200)
          throw new Error(`${this.received.name}: GET sdk-events of ${workerId} answered ${response.status}: ${await response.text()}`);
        const page = (await response.json()) as ListResponseOf<StoredEvent>;
        for (const event of page.items) this.received.add(workerId, event);
        if (page.items.length === 0) await new Promise((resolve) => setTimeout(resolve, IDLE_POLL_MS));
      }
    });
  }

  /** Resolves when every loop has finished; rejects with the first loop's failure. */
  async finished(): Promise<void> {
    await Promise.all(this.loops);
  }

  stop(): void {
    this.stopped = true;
  }
}
