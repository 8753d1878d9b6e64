import pg from 'pg';
import { EXAMPLE_EVENTS, type CreateWorkerResultType, type IncomingEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { failedAnswer, type FailedAnswer } from './answers.js';
import { Poller, StreamViewer, type ReceivedEvents } from './readers.js';
import type { E2eStack, StackNats } from './stack.js';

export type { FailedAnswer } from './answers.js';

/** A refused batch is sent again after a quarter of its `Retry-After` (200 ms when none), at most this long. */
const RESEND_PAUSE_MAX_MS = 250;

/** The events a fake sidecar has posted and had accepted, in order, and what went wrong on the way. */
class RetryingSidecar {
  readonly accepted: string[] = [];
  readonly failures: FailedAnswer[] = [];
  /** When each 202 came. */
  readonly acceptedAt: number[] = [];
  private next = 0;
  private stopped = false;
  private loop: Promise<void> = Promise.resolve();

  constructor(
    readonly worker: CreateWorkerResultType,
    private readonly gatewayUrl: string,
  ) {}

  private batch(): IncomingEvent[] {
    const examples = Object.values(EXAMPLE_EVENTS);
    const size = 1 + (this.next % 10);
    return Array.from({ length: size }, () => {
      const n = this.next++;
      return { ...examples[n % examples.length]!, uid: `${this.worker.worker_id}:${n}` } as IncomingEvent;
    });
  }

  /**
   * Posts batches of 1–10 events every `intervalMs` until stopped, as the sidecar does: a batch
   * not accepted (503/504, or no connection at all) is sent again, the same uids, after
   * `Retry-After` (or a short pause), until it is; only then comes the next one.
   */
  start(intervalMs: number): void {
    this.loop = (async () => {
      while (!this.stopped) {
        const events = this.batch();
        for (;;) {
          const started = Date.now();
          let response: Response | undefined;
          try {
            response = await fetch(`${this.gatewayUrl}/v1/workers/${this.worker.worker_id}/sdk-events`, {
              method: 'POST',
              headers: { authorization: `Bearer ${this.worker.token}`, 'content-type': 'application/json' },
              body: JSON.stringify({ events }),
              signal: AbortSignal.timeout(10_000),
            });
          } catch {
            response = undefined;
          }
          if (response?.status === 202) {
            await response.arrayBuffer();
            this.accepted.push(...events.map((e) => e.uid));
            this.acceptedAt.push(Date.now());
            break;
          }
          const failure = await failedAnswer(response, started);
          this.failures.push(failure);
          if (response && response.status !== 503 && response.status !== 504)
            throw new Error(`POST sdk-events of ${this.worker.worker_id} answered ${response.status} ${JSON.stringify(failure.body)}`);
          const retryAfterMs = Number(response?.headers.get('retry-after') ?? 0.2) * 1000;
          await new Promise((resolve) => setTimeout(resolve, Math.min(retryAfterMs / 4, RESEND_PAUSE_MAX_MS)));
        }
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
      }
    })();
  }

  /** Stops after the batch in hand is accepted. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

/** Fake sidecars posting with real retry behaviour, while WebSocket viewers and pollers read every worker. */
export interface Load {
  sidecars: RetryingSidecar[];
  viewers: StreamViewer[];
  pollers: Poller[];
  /** Stops posting; resolves once every sidecar's last batch is accepted. */
  stopPosting(): Promise<void>;
}

export async function startLoad(
  stack: E2eStack<StackNats>,
  options: { owner: string; userToken: string; sidecars: number; viewers: number; pollers: number; intervalMs: number },
): Promise<Load> {
  const workers = await Promise.all(Array.from({ length: options.sidecars }, () => stack.createWorker(options.owner)));
  const workerIds = workers.map((w) => w.worker_id);
  const sidecars = workers.map((worker) => new RetryingSidecar(worker, stack.gatewayUrl));
  const viewers = Array.from({ length: options.viewers }, (_, i) => new StreamViewer(`viewer-${i}`, stack.gatewayUrl, options.userToken, { reconnect: true }));
  const pollers = Array.from({ length: options.pollers }, (_, i) => new Poller(`poller-${i}`, stack.gatewayUrl, options.userToken));
  await Promise.all(viewers.map((viewer) => viewer.watch(workerIds)));
  let posting = true;
  const acceptedOf = (workerId: string) => sidecars.find((s) => s.worker.worker_id === workerId)!.accepted.length;
  for (const poller of pollers) poller.poll(workerIds, (workerId) => !posting && poller.received.count(workerId) >= acceptedOf(workerId));
  for (const sidecar of sidecars) sidecar.start(options.intervalMs);
  return {
    sidecars,
    viewers,
    pollers,
    async stopPosting() {
      await Promise.all(sidecars.map((sidecar) => sidecar.stop()));
      posting = false;
    },
  };
}

/**
 * What a fault must leave: every accepted event stored exactly once (no uid twice, none
 * missing), and every reader holding every accepted event of every worker, once, in order, ids
 * 1, 2, 3…. Waits up to `withinMs` for the readers to catch up.
 */
export async function expectEverythingOnceInOrder(stack: E2eStack<StackNats>, load: Load, withinMs = 90_000): Promise<void> {
  const readers: ReceivedEvents[] = [...load.viewers.map((v) => v.received), ...load.pollers.map((p) => p.received)];
  const complete = () => load.sidecars.every((s) => readers.every((r) => r.count(s.worker.worker_id) >= s.accepted.length));
  await waitFor('every reader to have every accepted event', complete, withinMs, 100).catch((err: unknown) => {
    const short = readers.map((r) => `${r.name}: ${load.sidecars.map((s) => `${r.count(s.worker.worker_id)}/${s.accepted.length}`).join(' ')}`).join('\n');
    throw new Error(`${String(err)}\n${short}\n${stack.outputs()}`);
  });
  await Promise.all(load.pollers.map((poller) => poller.finished()));
  for (const reader of readers) {
    if (reader.violations.length > 0) throw new Error(`${reader.name}: ${reader.violations.slice(0, 10).join('; ')}`);
    for (const sidecar of load.sidecars) {
      const uids = (reader.byWorker.get(sidecar.worker.worker_id) ?? []).map((e) => e.uid);
      if (uids.join(',') !== sidecar.accepted.join(','))
        throw new Error(
          `${reader.name} ${sidecar.worker.worker_id}: the events differ from those accepted (${uids.length} received, ${sidecar.accepted.length} accepted)`,
        );
    }
  }
  const client = new pg.Client({ connectionString: stack.postgres.url });
  await client.connect();
  try {
    const { rows } = await client.query<{ worker_id: string; count: string; uids: string; last: string }>(
      'select worker_id, count(*) as count, count(distinct uid) as uids, max(id) as last from events where worker_id = any($1) group by worker_id',
      [load.sidecars.map((s) => s.worker.worker_id)],
    );
    for (const sidecar of load.sidecars) {
      const row = rows.find((r) => r.worker_id === sidecar.worker.worker_id);
      const expected = String(sidecar.accepted.length);
      if (row?.count !== expected || row.uids !== expected || row.last !== expected)
        throw new Error(`${sidecar.worker.worker_id}: stored ${JSON.stringify(row)}, accepted ${expected}`);
    }
  } finally {
    await client.end();
  }
  for (const viewer of load.viewers) await viewer.disconnect();
}

/** Every answer a client got during a fault that was not a success: all 503/504 `APIError`s with `Retry-After` (or no connection at all). */
export function unexpectedFailures(load: Load): FailedAnswer[] {
  const answers = [...load.sidecars.flatMap((s) => s.failures), ...load.pollers.flatMap((p) => p.failures)];
  return answers.filter((a) => a.status !== 0 && !((a.status === 503 || a.status === 504) && a.code !== undefined && a.retryAfter));
}
