import { listStoredEvents, type NatsConnection } from '@svc/bus';
import { EVENT_LIST_LIMIT, EventFollower, isAgentInput, subjects, type FollowerStats, type StoredEvent, type StoredEventBatchType } from '@svc/protocol';
import type { LiveFeeds } from './live-feeds.js';

/** A page of agent inputs as the pending poll answers it. */
export interface AgentInputPage {
  items: StoredEvent[];
  total: number;
}

/** Inputs kept in memory per worker: a sidecar's cursor is at most this far behind in practice. */
const KEPT_INPUTS = 256;

export interface AgentInputLogOptions {
  /** The worker's stored events after `afterId` (a page of at most `EVENT_LIST_LIMIT.max`): fills a hole. */
  read(afterId: string): Promise<readonly StoredEvent[]>;
  /** Each input once delivered in order. */
  onInput?(input: StoredEvent): void;
  stats?: FollowerStats;
}

/**
 * What this gateway knows of one worker's agent inputs (`isAgentInput`: decisions, people's messages
 * and interrupts): a store read (the worker's head id and its input count, taken with the page), then the worker's announced events in order through an
 * `EventFollower` (which refills from the store should an announcement be lost).
 *
 * Invariant while seeded: every event with id ≤ the follower's `lastId` has been accounted for,
 * `total` is the number of inputs among them, and `kept` holds every input with id > `floor`.
 */
export class AgentInputLog {
  private follower: EventFollower;
  private isSeeded = false;
  private total = 0;
  private floor = 0n;
  private kept: Array<{ id: bigint; event: StoredEvent }> = [];

  constructor(private readonly options: AgentInputLogOptions) {
    this.follower = this.newFollower();
  }

  /** An announced event of the worker (heard from before the first store read). */
  heard(event: StoredEvent): void {
    this.follower.heard(event);
  }

  /**
   * A store read: `page` holds the inputs after `afterId` (at most `limit`), `last_id` the
   * worker's head when `total` was counted, read before the page. The first read starts the log;
   * later ones add nothing (announcements carry it on from there).
   */
  seeded(afterId: string, page: AgentInputPage & { last_id?: string | undefined }, limit: number): void {
    if (this.isSeeded || page.last_id === undefined) return;
    this.isSeeded = true;
    const head = BigInt(page.last_id);
    this.total = page.total;
    const cursor = BigInt(afterId);
    this.kept = [];
    if (page.items.length < limit && cursor <= head) {
      // The page holds every input after the cursor, so every one up to the head.
      this.floor = cursor;
      for (const event of page.items) {
        const id = BigInt(event.id);
        if (id <= head) this.keep(event, id);
      }
    } else {
      this.floor = head;
    }
    this.follower.restartAt(page.last_id);
    void this.follower.start({ replay: false });
  }

  /**
   * The inputs after `afterId` up to what the follower has delivered, when this log can prove
   * them all; undefined when only the store can say (nothing read yet, or a cursor outside what is kept).
   */
  after(afterId: string, limit: number): AgentInputPage | undefined {
    if (!this.isSeeded) return undefined;
    const cursor = BigInt(afterId);
    if (cursor < this.floor || cursor > this.follower.lastId) return undefined;
    // `kept` is in id order: find where the cursor falls, scanning back from the newest (a
    // sidecar's cursor is usually at or near the end).
    let first = this.kept.length;
    while (first > 0 && this.kept[first - 1]!.id > cursor) first -= 1;
    const items = this.kept.slice(first, first + limit).map((kept) => kept.event);
    return { items, total: this.total };
  }

  /** An event of the worker heard before its announcement on the stored-event stream: see `EventFollower.offer`. */
  offer(event: StoredEvent): void {
    if (this.isSeeded) this.follower.offer(event);
  }

  /** Start over from the store (announcements may have been lost, or a refill failed). */
  forget(): void {
    this.follower.stop();
    this.follower = this.newFollower();
    this.isSeeded = false;
    this.total = 0;
    this.kept = [];
  }

  private newFollower(): EventFollower {
    return new EventFollower('0', {
      read: this.options.read,
      pageSize: EVENT_LIST_LIMIT.max,
      deliver: (event) => {
        if (!isAgentInput(event)) return;
        this.total += 1;
        this.keep(event);
        this.options.onInput?.(event);
      },
      onError: () => this.forget(),
      ...(this.options.stats ? { stats: this.options.stats } : {}),
    });
  }

  private keep(input: StoredEvent, id = BigInt(input.id)): void {
    this.kept.push({ id, event: input });
    if (this.kept.length > KEPT_INPUTS) this.floor = this.kept.shift()!.id;
  }
}

/** One worker's agent inputs while its polls come: the log, and a way to wait for the next input. */
interface AgentInputFeed {
  readonly log: AgentInputLog;
  /**
   * Resolves true as soon as an input with id > `afterId` is delivered in order, false after `waitMs` or
   * when `hangUp` fires.
   */
  nextInput(
    afterId: string,
    waitMs: number,
    hangUp: { once(event: 'close', listener: () => void): unknown; off(event: 'close', listener: () => void): unknown },
  ): Promise<boolean>;
  /** The poll is done with it. */
  release(): void;
}

export interface AgentInputFeeds {
  /** The worker's feed; watching starts before this returns, so a read made after it misses nothing. */
  open(workerId: string): AgentInputFeed;
}

/**
 * Keeps an `AgentInputLog` per worker whose sidecar polls this gateway, so that a poll is answered
 * from memory: a sidecar polls again the moment it is answered, and reading the store for every
 * poll cost the next input a NATS round trip to event-ingest and a query. A worker's log is
 * kept `lingerMs` after its last poll ends (the next poll usually follows within milliseconds).
 */
export function createAgentInputFeeds(nc: NatsConnection, live: LiveFeeds, options: { lingerMs?: number; stats?: FollowerStats } = {}): AgentInputFeeds {
  const lingerMs = options.lingerMs ?? 30_000;
  const feeds = new Map<
    string,
    { log: AgentInputLog; waiters: Set<(input: StoredEvent) => void>; polls: number; stopWatching(): void; linger?: NodeJS.Timeout }
  >();
  // Announcements sent while the connection is down, or dropped for a slow consumer, are lost:
  // what the logs hold is proven no longer.
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect' || status.type === 'slowConsumer') for (const feed of feeds.values()) feed.log.forget();
    }
  })();

  function feedOf(workerId: string) {
    let feed = feeds.get(workerId);
    if (!feed) {
      const waiters = new Set<(input: StoredEvent) => void>();
      const log = new AgentInputLog({
        read: async (afterId) => (await listStoredEvents(nc, { worker_id: workerId, after_id: afterId, limit: EVENT_LIST_LIMIT.max })).items,
        onInput: (input) => waiters.forEach((waiter) => waiter(input)),
        ...(options.stats ? { stats: options.stats } : {}),
      });
      const stopWatching = live.watch(workerId, (event) => log.heard(event));
      feed = { log, waiters, polls: 0, stopWatching };
      feeds.set(workerId, feed);
    }
    return feed;
  }

  // Control events (requests, withdrawals, decisions, people's messages and interrupts) as
  // event-ingest repeats them on core NATS the moment they are committed, before the stored-event
  // stream has them: a poll waiting here gets an input one hop sooner, on whichever gateway it waits. In order or not at all
  // (`EventFollower.offer`); the stream's announcement then is a repeat, or brings what this missed.
  nc.subscribe(subjects.controlEventsAll, {
    callback: (err, msg) => {
      // The subject names the worker: a batch of a worker nobody polls here is not even decoded.
      const feed = err ? undefined : feeds.get(msg.subject.slice(msg.subject.lastIndexOf('.') + 1));
      if (feed) for (const event of msg.json<StoredEventBatchType>().events) feed.log.offer(event);
    },
  });

  return {
    open(workerId) {
      const feed = feedOf(workerId);
      clearTimeout(feed.linger);
      feed.polls += 1;
      return {
        log: feed.log,
        nextInput(afterId, waitMs, hangUp) {
          const cursor = BigInt(afterId);
          return new Promise<boolean>((resolve) => {
            const done = (arrived: boolean) => {
              clearTimeout(timer);
              feed.waiters.delete(waiter);
              hangUp.off('close', hungUp);
              resolve(arrived);
            };
            const waiter = (input: StoredEvent) => BigInt(input.id) > cursor && done(true);
            const hungUp = () => done(false);
            const timer = setTimeout(() => done(false), waitMs);
            feed.waiters.add(waiter);
            hangUp.once('close', hungUp);
          });
        },
        release() {
          feed.polls -= 1;
          if (feed.polls > 0) return;
          feed.linger = setTimeout(() => {
            if (feed.polls > 0 || feeds.get(workerId) !== feed) return;
            feeds.delete(workerId);
            feed.stopWatching();
          }, lingerMs);
          feed.linger.unref();
        },
      };
    },
  };
}
