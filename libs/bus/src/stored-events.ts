import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import {
  EVENT_LIST_LIMIT,
  EventFollower,
  streams,
  subjects,
  type FollowerStats,
  type ListEventsRequestType,
  type ListEventsResultType,
  type StoredEvent,
  type StoredEventBatchType,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { NatsConnection } from './connection.js';
import { consumeLasting } from './lasting-consumer.js';
import { requestJson } from './messaging.js';

/**
 * A list query is sent again once when no replica answers in time: an event-ingest replica that
 * dies (or restarts) with the query in hand never answers, and its partner will.
 */
const QUERY_RETRIES = 1;

/** A page of a worker's stored events, from event-ingest (the owner of the event log). */
export function listStoredEvents(nc: NatsConnection, query: ListEventsRequestType, options: { requestId?: string } = {}): Promise<ListEventsResultType> {
  return requestJson<ListEventsResultType>(nc, subjects.rpc.listEvents, query, { ...options, retries: QUERY_RETRIES });
}

export interface StoredEventSubscription {
  stop(): Promise<void>;
}

export interface StoredEventSubscriberOptions {
  /** Names the durable consumer: a subscriber that restarts with the same name resumes where it was. */
  durableName: string;
  /** Only this worker's events (default: every worker's). */
  workerId?: string;
  /**
   * Only the events of a worker's life (`agent_exit`, `activity`), from their own stream
   * (`SVC_EVENTS_LIFECYCLE`): a subscriber that needs nothing else is not woken by every event.
   */
  lifecycleOnly?: boolean;
  /** Where a new durable starts: every event the stream still keeps, or only new ones. */
  from?: 'all' | 'new';
  /**
   * Called once per stored event, in id order per worker. An announcement (one commit's events)
   * is acknowledged when the handler has resolved for each of its events.
   */
  handler: (event: StoredEvent) => Promise<void> | void;
  logger: Logger;
  stats?: FollowerStats;
}

/** The worker an announcement is about, if it says (a message that is not JSON says nothing). */
function workerOf(msg: { json<T>(): T }): string | undefined {
  try {
    return msg.json<StoredEventBatchType>().worker_id;
  } catch {
    return undefined;
  }
}

/** Workers whose place is remembered; past this the least recently seen is forgotten (and followed afresh). */
const REMEMBERED_WORKERS = 100_000;

/**
 * Each worker's events in id order, once, through an `EventFollower` per worker: a hole (an
 * announcement lost between commit and JetStream) is filled from the store.
 */
function createHandoverOrder(nc: NatsConnection, stats: FollowerStats | undefined) {
  // The highest id whose handler resolved, per worker: a follower that restarts begins there.
  const handledUpTo = new Map<string, bigint>();
  const followers = new Map<string, { follower: EventFollower; delivered: StoredEvent[]; failure(): unknown }>();

  function followerOf(workerId: string, firstId: bigint) {
    const known = followers.get(workerId);
    if (known) return known;
    const delivered: StoredEvent[] = [];
    let failed: unknown;
    const follower = new EventFollower((handledUpTo.get(workerId) ?? firstId - 1n).toString(), {
      read: async (afterId) => (await listStoredEvents(nc, { worker_id: workerId, after_id: afterId, limit: EVENT_LIST_LIMIT.max })).items,
      pageSize: EVENT_LIST_LIMIT.max,
      deliver: (event) => void delivered.push(event),
      onError: (err) => void (failed = err),
      ...(stats ? { stats } : {}),
    });
    void follower.start({ replay: false });
    const entry = { follower, delivered, failure: () => failed };
    followers.set(workerId, entry);
    if (followers.size > REMEMBERED_WORKERS) followers.delete(followers.keys().next().value!);
    return entry;
  }

  return {
    /** The announcement's events that follow on from what was handed over, with any hole filled first. */
    async follow(batch: StoredEventBatchType): Promise<StoredEvent[]> {
      const entry = followerOf(batch.worker_id, BigInt(batch.events[0]!.id));
      for (const event of batch.events) entry.follower.heard(event);
      await entry.follower.settled();
      if (entry.failure() !== undefined) throw entry.failure();
      return entry.delivered.splice(0);
    },
    handledUpTo: (workerId: string) => handledUpTo.get(workerId) ?? 0n,
    handled(event: StoredEvent): void {
      handledUpTo.delete(event.worker_id);
      handledUpTo.set(event.worker_id, BigInt(event.id));
      if (handledUpTo.size > REMEMBERED_WORKERS) handledUpTo.delete(handledUpTo.keys().next().value!);
    },
    /** A handler failed part-way: the next delivery starts after the last event it handled. */
    restart(workerId: string | undefined): void {
      if (workerId === undefined) return;
      followers.get(workerId)?.follower.stop();
      followers.delete(workerId);
    },
  };
}

/**
 * How an internal service follows stored events durably (docs/bus.md): a JetStream durable
 * consumer on `SVC_EVENTS_STORED` (or `SVC_EVENTS_LIFECYCLE` with `lifecycleOnly`). An event whose handler fails is delivered again after a
 * pause; the stream keeps events for 24 hours (or 1 GiB), so a subscriber down for less misses
 * nothing. Within one run each event is handed over once and in id order per worker (a hole, an
 * announcement that never reached JetStream, is filled from the store); after a restart, the
 * events of an announcement that was handled only in part are handed over again (at least once).
 */
export async function subscribeStoredEvents(nc: NatsConnection, options: StoredEventSubscriberOptions): Promise<StoredEventSubscription> {
  const log = options.logger.child({ component: 'stored-events', durable: options.durableName });
  const jsm = await jetstreamManager(nc);
  const stream = options.lifecycleOnly ? streams.lifecycleEvents.name : streams.storedEvents.name;
  const subjectOf = options.lifecycleOnly ? subjects.lifecycleEvent : subjects.storedEvent;
  // Made again when it is gone (a cluster's server lost with it): `add` of a durable that exists is harmless.
  const open = async () => {
    await jsm.consumers.add(stream, {
      durable_name: options.durableName,
      filter_subject: options.workerId ? subjectOf(options.workerId) : options.lifecycleOnly ? subjects.lifecycleAll : subjects.storedAll,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: options.from === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
      ack_wait: nanos(30_000),
      // One event in flight at a time keeps each worker's order through redeliveries.
      max_ack_pending: 1,
    });
    return (await jetstream(nc).consumers.get(stream, options.durableName)).consume({ max_messages: 100, abort_on_missing_resource: true });
  };
  const inOrder = createHandoverOrder(nc, options.stats);
  const consumption = await consumeLasting(
    open,
    async (msg) => {
      try {
        const batch = msg.json<StoredEventBatchType>();
        const events = options.lifecycleOnly ? batch.events : await inOrder.follow(batch);
        for (const event of events) {
          // Agent exits are a few of a worker's ids: no hole to fill, only repeats to skip.
          if (options.lifecycleOnly && BigInt(event.id) <= inOrder.handledUpTo(event.worker_id)) continue;
          await options.handler(event);
          inOrder.handled(event);
        }
        msg.ack();
      } catch (err) {
        inOrder.restart(workerOf(msg));
        log.error({ err, seq: msg.seq }, 'stored-event handler failed; it will be delivered again');
        msg.nak(1000);
      }
    },
    { logger: log, what: `${stream} ${options.durableName}` },
  );
  return { stop: () => consumption.stop() };
}
