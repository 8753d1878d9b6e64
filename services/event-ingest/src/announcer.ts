import { publishJson, type DurablePublisher, type NatsConnection } from '@svc/bus';
import { agentExitCodeOf, isControlEvent, storedBatchMessageId, subjects, type StoredEvent, type StoredEventBatchType } from '@svc/protocol';
import type { Context, Logger } from '@svc/service-kit';
import type { Acknowledgements } from './acknowledgements.js';
import { ingestMetrics } from './metrics.js';

/** Workers whose last announced id is remembered; past this the least recently announced is forgotten. */
const REMEMBERED_WORKERS = 100_000;

export interface AnnouncerDeps {
  nc: NatsConnection;
  publisher: DurablePublisher;
  /** The worker's stored events after `afterId`, in id order, at most `limit`. */
  readAfter(workerId: string, afterId: string, limit: number): Promise<StoredEvent[]>;
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
  /** Times the store was read to fill a hole (events stored by another service, a decision). */
  readonly fills: number;
}

/**
 * The one announcer of stored events (docs/architecture.md). Events reach it from its own commits
 * and from other services that stored one themselves (the control service's decisions, handed
 * over on the worker's incoming partition): each worker's announcements follow one another by id,
 * so a follower never waits for an id that comes later from somewhere else. When what is to be
 * announced does not follow on from the last announced id (a decision committed just before
 * this commit, whose hand-over is still on its way), the store has the ids in between: every id
 * up to a committed one is committed, since ids are handed out under the worker's lock.
 *
 * The last announced id per worker lives in memory: a restarted replica announces what it is
 * given (redelivered messages announce their events again; followers skip what they have).
 */
export function createAnnouncer(deps: AnnouncerDeps): Announcer {
  const log = deps.logger.child({ component: 'announcer' });
  const announced = new Map<string, bigint>();
  // One announcement per worker at a time: the partition's batches and hand-overs from other
  // services (stored-elsewhere.ts) arrive concurrently, and each must start from the last id
  // the one before it announced.
  const inTurn = new Map<string, Promise<void>>();
  let fills = 0;

  /** What follows on from `last` up to the newest of `events`, with any hole read from the store. */
  async function followingOn(workerId: string, events: readonly StoredEvent[], last: bigint | undefined): Promise<StoredEvent[]> {
    const byId = new Map<bigint, StoredEvent>();
    for (const event of events) {
      const id = BigInt(event.id);
      if (last === undefined || id > last) byId.set(id, event);
    }
    if (byId.size === 0) return [];
    const ids = [...byId.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    const from = last ?? ids[0]! - 1n;
    const to = ids.at(-1)!;
    if (BigInt(ids.length) === to - from) return ids.map((id) => byId.get(id)!);
    fills += 1;
    ingestMetrics.refills.inc();
    const read = await deps.readAfter(workerId, from.toString(), Number(to - from));
    log.debug({ worker_id: workerId, after_id: from.toString(), to: to.toString() }, 'filled a hole from the store');
    return read;
  }

  function remember(workerId: string, id: bigint): void {
    announced.delete(workerId);
    announced.set(workerId, id);
    if (announced.size > REMEMBERED_WORKERS) announced.delete(announced.keys().next().value!);
  }

  return {
    get fills() {
      return fills;
    },
    announce(workerId, events, trace) {
      const turn = (inTurn.get(workerId) ?? Promise.resolve()).catch(() => {}).then(() => announceInTurn(workerId, events, trace));
      inTurn.set(workerId, turn);
      const settled = () => {
        if (inTurn.get(workerId) === turn) inTurn.delete(workerId);
      };
      turn.then(settled, settled);
      return turn;
    },
  };

  async function announceInTurn(workerId: string, events: readonly StoredEvent[], trace: Context | undefined): Promise<void> {
    const batch: StoredEventBatchType = { worker_id: workerId, events: await followingOn(workerId, events, announced.get(workerId)) };
    if (batch.events.length === 0) return;
    const exits = batch.events.filter((event) => agentExitCodeOf(event) !== undefined);
    const lifecycle: StoredEventBatchType = { worker_id: workerId, events: exits };
    if (!deps.dropAnnouncement?.(batch)) {
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
    const control = batch.events.filter(isControlEvent);
    if (control.length > 0) publishJson(deps.nc, subjects.controlEvents(workerId), { worker_id: workerId, events: control } satisfies StoredEventBatchType);
    remember(workerId, BigInt(batch.events.at(-1)!.id));
  }
}
