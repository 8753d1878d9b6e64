import { publishJson, type DurablePublisher, type NatsConnection } from '@svc/bus';
import { activityOf, agentExitCodeOf, isControlEvent, storedBatchMessageId, subjects, type StoredEvent, type StoredEventBatchType } from '@svc/protocol';
import type { Context, Logger } from '@svc/service-kit';
import type { Acknowledgements } from './acknowledgements.js';
import { ingestMetrics } from './metrics.js';

/** Workers whose last announced id is remembered; past this the least recently announced is forgotten. */
const REMEMBERED_WORKERS = 100_000;

export interface AnnouncerDeps {
  nc: NatsConnection;
  publisher: DurablePublisher;
  logger: Logger;
  /** Sent in the same socket write as each announcement (acknowledgements.ts). */
  acknowledgements?: Acknowledgements | undefined;
  /** Tests only: an announcement for which this returns true is not sent (as if lost on the way). */
  dropAnnouncement?: ((batch: StoredEventBatchType) => boolean) | undefined;
}

export interface Announcer {
  /**
   * Announces a worker's stored events after commit on `svc.events.stored.<worker>`: one
   * `StoredEventBatch`, in id order, following on from the last one without a hole. Resolves when
   * JetStream has it. `trace`: the context its message carries (docs/tracing.md).
   */
  announce(workerId: string, events: readonly StoredEvent[], trace?: Context): Promise<void>;
}

/**
 * The one announcer of stored events (docs/architecture.md). Each worker's events are stored by
 * one writer, the partition consumer of the replica owning its partition, which announces each
 * commit before it stores the next (a decision takes its turn between two batches,
 * decision-appends.ts), so each worker's announcements follow one another by id. What was
 * announced already (a redelivered batch stored again) is not announced twice by this replica;
 * an announcement that was lost leaves a hole that followers fill from the store
 * (`EventFollower`).
 *
 * The last announced id per worker lives in memory: a restarted replica announces what it is
 * given (redelivered messages announce their events again; followers skip what they have).
 */
export function createAnnouncer(deps: AnnouncerDeps): Announcer {
  const announced = new Map<string, bigint>();
  /** The events after `last`, in id order (each id parsed once: this is on every batch's path). */
  function after(events: readonly StoredEvent[], last: bigint | undefined): StoredEvent[] {
    const fresh = events.map((event) => ({ id: BigInt(event.id), event })).filter(({ id }) => last === undefined || id > last);
    return fresh.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map(({ event }) => event);
  }

  function remember(workerId: string, id: bigint): void {
    announced.delete(workerId);
    announced.set(workerId, id);
    if (announced.size > REMEMBERED_WORKERS) announced.delete(announced.keys().next().value!);
  }

  return { announce };

  async function announce(workerId: string, events: readonly StoredEvent[], trace?: Context): Promise<void> {
    const batch: StoredEventBatchType = { worker_id: workerId, events: after(events, announced.get(workerId)) };
    if (batch.events.length === 0) return;
    const exits = batch.events.filter((event) => agentExitCodeOf(event) !== undefined || activityOf(event) !== undefined);
    const lifecycle: StoredEventBatchType = { worker_id: workerId, events: exits };
    const control = batch.events.filter(isControlEvent);
    if (!deps.dropAnnouncement?.(batch)) {
      // The control events first, on core NATS: the control service's deadlines and every
      // gateway's waiting long polls act on them (a decision is on the agent's path), and they
      // are committed already; the stored-event stream, durable, follows in the same socket write.
      if (control.length > 0) publishJson(deps.nc, subjects.controlEvents(workerId), { worker_id: workerId, events: control } satisfies StoredEventBatchType);
      // Handed to the connection in the same synchronous run as the publish: one socket write.
      deps.acknowledgements?.flush();
      await Promise.all([
        deps.publisher.publish(subjects.storedEvent(workerId), batch, { messageId: storedBatchMessageId(batch), immediate: true, trace }),
        exits.length > 0
          ? deps.publisher.publish(subjects.lifecycleEvent(workerId), lifecycle, { messageId: storedBatchMessageId(lifecycle), immediate: true })
          : undefined,
      ]);
    }
    ingestMetrics.announced.inc(batch.events.length);
    remember(workerId, BigInt(batch.events.at(-1)!.id));
  }
}
