import type { NatsConnection } from '@svc/bus';
import type { StoredEvent } from '@svc/protocol';
import type { LiveFeeds } from './live-feeds.js';

/** A page of decisions as the pending poll answers it. */
export interface DecisionPage {
  items: StoredEvent[];
  total: number;
}

/** Decisions kept in memory per worker: a sidecar's cursor is at most this far behind in practice. */
const KEPT_DECISIONS = 256;
/** Announcements held while a missing id is awaited; more means something is lost, so start over from the store. */
const HELD_AHEAD = 1024;

/**
 * What this gateway knows of one worker's decisions: a store read (the worker's head id and its
 * decision count, taken with the page) and the announcements heard since. Ids are per worker and
 * have no holes, so announced events that follow the head one by one prove that nothing in
 * between was missed; an event after a missing id is held until the id arrives (announcements of
 * event-ingest and of the control service may cross) or the next store read.
 *
 * Invariant while `head` is known: every event with id ≤ `head` has been accounted for, `total`
 * is the number of decisions among them, and `kept` holds every decision with id > `floor`.
 */
export class DecisionLog {
  private head: bigint | undefined;
  private total = 0;
  private floor = 0n;
  private kept: Array<{ id: bigint; event: StoredEvent }> = [];
  private readonly ahead = new Map<bigint, StoredEvent>();

  /** An announced event of the worker. */
  heard(event: StoredEvent): void {
    const id = BigInt(event.id);
    if (this.head !== undefined && id <= this.head) return;
    if (this.ahead.size >= HELD_AHEAD) this.forget();
    this.ahead.set(id, event);
    this.advance();
  }

  /**
   * A store read: `page` holds the decisions after `afterId` (at most `limit`), `last_id` the
   * worker's head when `total` was counted, read before the page.
   */
  seeded(afterId: string, page: DecisionPage & { last_id?: string | undefined }, limit: number): void {
    if (page.last_id === undefined) return;
    const head = BigInt(page.last_id);
    if (this.head !== undefined && head <= this.head) return;
    this.head = head;
    this.total = page.total;
    const cursor = BigInt(afterId);
    if (page.items.length < limit && cursor <= head) {
      // The page holds every decision after the cursor, so every one up to the head.
      this.floor = cursor;
      this.kept = [];
      for (const event of page.items) {
        const id = BigInt(event.id);
        if (id <= head) this.keep(event, id);
      }
    } else {
      this.floor = head;
      this.kept = [];
    }
    for (const id of this.ahead.keys()) if (id <= head) this.ahead.delete(id);
    this.advance();
  }

  /**
   * The decisions after `afterId` up to the head, when this log can prove them all; undefined
   * when only the store can say (nothing read yet, a cursor outside what is kept, or a decision
   * heard beyond a missing id).
   */
  after(afterId: string, limit: number): DecisionPage | undefined {
    if (this.head === undefined) return undefined;
    const cursor = BigInt(afterId);
    if (cursor < this.floor || cursor > this.head) return undefined;
    for (const held of this.ahead.values()) if (held.type === 'control_response') return undefined;
    // `kept` is in id order: find where the cursor falls, scanning back from the newest (a
    // sidecar's cursor is usually at or near the end).
    let first = this.kept.length;
    while (first > 0 && this.kept[first - 1]!.id > cursor) first -= 1;
    const items = this.kept.slice(first, first + limit).map((kept) => kept.event);
    return { items, total: this.total };
  }

  private advance(): void {
    if (this.head === undefined) return;
    for (let next = this.ahead.get(this.head + 1n); next; next = this.ahead.get(this.head + 1n)) {
      this.ahead.delete(this.head + 1n);
      this.head += 1n;
      if (next.type !== 'control_response') continue;
      this.total += 1;
      this.keep(next, this.head);
    }
  }

  private keep(decision: StoredEvent, id = BigInt(decision.id)): void {
    this.kept.push({ id, event: decision });
    if (this.kept.length > KEPT_DECISIONS) this.floor = this.kept.shift()!.id;
  }

  /** Start over from the store (announcements may have been lost). */
  forget(): void {
    this.head = undefined;
    this.kept = [];
    this.ahead.clear();
  }
}

/** One worker's decisions while its polls come: the log, and a way to wait for the next decision. */
export interface DecisionFeed {
  readonly log: DecisionLog;
  /**
   * Resolves true as soon as a decision with id > `afterId` is announced, false after `waitMs` or
   * when `hangUp` fires.
   */
  nextDecision(afterId: string, waitMs: number, hangUp: { once(event: 'close', listener: () => void): unknown; off(event: 'close', listener: () => void): unknown }): Promise<boolean>;
  /** The poll is done with it. */
  release(): void;
}

export interface DecisionFeeds {
  /** The worker's feed; watching starts before this returns, so a read made after it misses nothing. */
  open(workerId: string): DecisionFeed;
}

/**
 * Keeps a `DecisionLog` per worker whose sidecar polls this gateway, so that a poll is answered
 * from memory: a sidecar polls again the moment it is answered, and reading the store for every
 * poll cost the next decision a NATS round trip to event-ingest and a query. A worker's log is
 * kept `lingerMs` after its last poll ends (the next poll usually follows within milliseconds).
 */
export function createDecisionFeeds(nc: NatsConnection, live: LiveFeeds, options: { lingerMs?: number } = {}): DecisionFeeds {
  const lingerMs = options.lingerMs ?? 30_000;
  const feeds = new Map<string, { log: DecisionLog; waiters: Set<(decision: StoredEvent) => void>; polls: number; stopWatching(): void; linger?: NodeJS.Timeout }>();
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
      const log = new DecisionLog();
      const waiters = new Set<(decision: StoredEvent) => void>();
      const stopWatching = live.watch(workerId, (event) => {
        log.heard(event);
        if (event.type === 'control_response') for (const waiter of waiters) waiter(event);
      });
      feed = { log, waiters, polls: 0, stopWatching };
      feeds.set(workerId, feed);
    }
    return feed;
  }

  return {
    open(workerId) {
      const feed = feedOf(workerId);
      clearTimeout(feed.linger);
      feed.polls += 1;
      return {
        log: feed.log,
        nextDecision(afterId, waitMs, hangUp) {
          const cursor = BigInt(afterId);
          return new Promise<boolean>((resolve) => {
            const done = (decided: boolean) => {
              clearTimeout(timer);
              feed.waiters.delete(waiter);
              hangUp.off('close', hungUp);
              resolve(decided);
            };
            const waiter = (decision: StoredEvent) => BigInt(decision.id) > cursor && done(true);
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
