/**
 * Timing events from their POST to their viewers, as figure 3 of bench/ingest and the cost
 * curves measure it: single events posted at a steady rate, each viewer a WebSocket stream.
 */
import WebSocket from 'ws';
import type { CreateWorkerResultType, StreamFrame } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { percentile, post, sleep, type Pipeline } from './pipeline.js';

/** Opens a viewer's stream and resolves once it is live; `onEvent` gets each event's uid. */
export function openViewer(pipeline: Pipeline, workerId: string, onEvent: (uid: string) => void, gatewayUrl = pipeline.gatewayUrl): Promise<WebSocket> {
  const socket = new WebSocket(`${gatewayUrl.replace('http', 'ws')}/v1/workers/${workerId}/sdk-events/stream?after_id=0`, {
    headers: { authorization: `Bearer ${pipeline.userToken}` },
  });
  return new Promise((resolve, reject) => {
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as StreamFrame;
      if (frame.kind === 'live') resolve(socket);
      else onEvent(frame.event.uid);
    });
    socket.once('error', reject);
  });
}

/**
 * Calls `send(n)` for n = 0, 1, 2 … at `rate` per second for `seconds`, without waiting for
 * answers; resolves with the number sent once every call has settled.
 */
export async function atRate(seconds: number, rate: number, send: (n: number) => Promise<void>, onTick?: () => Promise<void>): Promise<number> {
  const started = performance.now();
  let sent = 0;
  const inFlight = new Set<Promise<void>>();
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent < due; sent++) {
      const request = send(sent).finally(() => inFlight.delete(request));
      inFlight.add(request);
    }
    await onTick?.();
    await sleep(2);
  }
  await Promise.all(inFlight);
  return sent;
}

export interface DeliveryOptions {
  viewersPerWorker: number;
  /** Events per second, over all workers, round-robin. */
  rate: number;
  seconds: number;
  eventOf: (uid: string) => unknown;
  /** Gateways to spread posts and viewers over, round-robin (default: the pipeline's first). */
  gatewayUrls?: string[];
  /** Only the first this many workers get viewers (the others are posted to, unwatched): many workers, a sample watched. */
  viewedWorkers?: number;
  onTick?: () => Promise<void>;
  /** Called once every viewer is live (its replay of the worker's history done), before the first POST. */
  onLive?: () => Promise<void>;
  clock?: { posting(uid: string): void; answered(uid: string): void };
}

/** Each measurement's uids are its own: a uid posted again would be a duplicate, stored and delivered once. */
let measurements = 0;

/**
 * Posts single events at `rate` per second spread over `workers` for `seconds` and measures,
 * for every viewer, the time from the start of the POST to the event's arrival.
 */
export async function measureDelivery(pipeline: Pipeline, workers: CreateWorkerResultType[], options: DeliveryOptions) {
  const { viewersPerWorker, clock } = options;
  const measurement = measurements++;
  const viewed = workers.slice(0, options.viewedWorkers ?? workers.length);
  const sentAt = new Map<string, number>();
  const latencies: number[] = [];
  const expected = { deliveries: 0 };
  const gateways = options.gatewayUrls ?? [pipeline.gatewayUrl];
  const viewers = await Promise.all(
    viewed.flatMap((worker, index) =>
      Array.from({ length: viewersPerWorker }, (_, viewer) =>
        openViewer(
          pipeline,
          worker.worker_id,
          (uid) => {
            const sent = sentAt.get(uid);
            if (sent !== undefined) latencies.push(performance.now() - sent);
          },
          gateways[(index + viewer) % gateways.length],
        ),
      ),
    ),
  );
  await options.onLive?.();
  const sent = await atRate(
    options.seconds,
    options.rate,
    (n) => {
      const index = n % workers.length;
      const worker = workers[index]!;
      const uid = `${worker.worker_id}:live${measurement}:${n}`;
      if (index < viewed.length) {
        sentAt.set(uid, performance.now());
        expected.deliveries += viewersPerWorker;
      }
      clock?.posting(uid);
      return post(pipeline, worker, options.eventOf(uid), gateways[(n + 1) % gateways.length]).then(() => clock?.answered(uid));
    },
    options.onTick,
  );
  await waitFor('every delivery', () => latencies.length >= expected.deliveries, 30_000).catch(() => undefined);
  for (const viewer of viewers) viewer.close();
  const sorted = latencies.sort((a, b) => a - b);
  return {
    sent,
    deliveries: latencies.length,
    missing: expected.deliveries - latencies.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? NaN,
    latencies: sorted,
  };
}
