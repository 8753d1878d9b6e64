import type { StoredEvent } from './envelope.js';

/** Counts shared by a process's followers (a gateway's WebSockets and long polls, say). */
export interface FollowerStats {
  /** Times a follower found a hole in the live events and read the store to fill it. */
  refills: number;
}

export function createFollowerStats(): FollowerStats {
  return { refills: 0 };
}

export interface EventFollowerOptions<Live> {
  /** The stored events of the worker after `afterId`, in id order: one page, at most `pageSize`. */
  read(afterId: string): Promise<readonly StoredEvent[]>;
  /** A page this long may have more after it. */
  pageSize: number;
  /**
   * Gets every event once, in id order, without holes. `live` is what `heard` was given with the
   * event (a frame encoded once for every viewer, say); undefined for events read from the store.
   */
  deliver(event: StoredEvent, live: Live | undefined): void;
  /** A store read failed: the follower has stopped (resume from `lastId` with a new one). */
  onError(err: unknown): void;
  stats?: FollowerStats;
}

/**
 * Follows one worker's events from a cursor: replay from the store, then live, refilling any hole
 * from the store. The one way svc reads a worker's events in order: the gateway's WebSocket
 * stream and long-poll input log, internal bus subscribers and the CLI's client all use it.
 *
 * Live events must be `heard` from before the replay's first read (so that nothing falls between
 * the two); they wait while the store is read. Event-ingest announces each worker's events after
 * commit, in id order, without holes (docs/architecture.md), so in a run without faults a live
 * event is always the next id and `stats.refills` stays 0; a hole means an announcement was lost
 * (a connection dropped, a crash between commit and announcement) and the store has the missing events.
 */
export class EventFollower<Live = undefined> {
  /** Every event up to this id has been delivered (or was before the cursor). */
  lastId: bigint;
  private readonly options: EventFollowerOptions<Live>;
  private held: Array<{ event: StoredEvent; live: Live | undefined }> = [];
  private catchingUp: Promise<void> | undefined;
  private started = false;
  private stopped = false;

  constructor(afterId: string, options: EventFollowerOptions<Live>) {
    this.lastId = BigInt(afterId);
    this.options = options;
  }

  /**
   * Starts delivering: with `replay` (the default) the store is read after the cursor first; without,
   * the caller has just read it up to the cursor itself (`restartAt`), so live events follow on.
   */
  start(options: { replay?: boolean } = {}): Promise<void> {
    this.started = true;
    if (options.replay === false && this.release()) return Promise.resolve();
    if (options.replay === false) this.countRefill();
    return this.catchUp();
  }

  /** Moves the cursor before `start` (a store read the caller made told it where the worker is). */
  restartAt(afterId: string): void {
    if (!this.started) this.lastId = BigInt(afterId);
  }

  /** A live event of the worker. */
  heard(event: StoredEvent, live?: Live): void {
    if (this.stopped) return;
    if (!this.started || this.catchingUp) return void this.held.push({ event, live });
    const id = BigInt(event.id);
    if (id <= this.lastId) return; // replayed or refilled already
    if (id === this.lastId + 1n) return this.deliver(event, live);
    this.held.push({ event, live });
    this.refill();
  }

  /**
   * An event known to be stored, from somewhere other than the announcements (the gateway that
   * took a decision has it in the control service's answer): delivered only when it follows on
   * from `lastId` with nothing waiting, else left to its announcement. True when delivered.
   */
  offer(event: StoredEvent): boolean {
    if (this.stopped || !this.started || this.catchingUp || this.held.length > 0) return false;
    if (BigInt(event.id) !== this.lastId + 1n) return false;
    this.deliver(event, undefined);
    return true;
  }

  /** Resolves once nothing is being read from the store (every event heard so far is delivered). */
  settled(): Promise<void> {
    return this.catchingUp ?? Promise.resolve();
  }

  stop(): void {
    this.stopped = true;
    this.held = [];
  }

  private deliver(event: StoredEvent, live: Live | undefined): void {
    this.lastId = BigInt(event.id);
    this.options.deliver(event, live);
  }

  private countRefill(): void {
    if (this.options.stats) this.options.stats.refills += 1;
  }

  private refill(): void {
    this.countRefill();
    void this.catchUp();
  }

  /** Reads the store, then delivers what was heard meanwhile; again while a held event shows a hole. */
  private catchUp(): Promise<void> {
    this.catchingUp ??= (async () => {
      try {
        for (;;) {
          await this.readStore();
          if (this.release() || this.stopped) return;
          this.countRefill();
        }
      } catch (err) {
        this.stop();
        this.options.onError(err);
      } finally {
        this.catchingUp = undefined;
      }
    })();
    return this.catchingUp;
  }

  /** Delivers the held events that follow on; false when one of them is after a hole. */
  private release(): boolean {
    const held = this.held;
    let index = 0;
    for (; index < held.length && !this.stopped; index++) {
      const { event, live } = held[index]!;
      const id = BigInt(event.id);
      if (id > this.lastId + 1n) break;
      if (id === this.lastId + 1n) this.deliver(event, live);
    }
    this.held = index === held.length ? [] : held.slice(index);
    return this.held.length === 0 || this.stopped;
  }

  private async readStore(): Promise<void> {
    for (;;) {
      const page = await this.options.read(this.lastId.toString());
      for (const event of page) {
        if (this.stopped) return;
        if (BigInt(event.id) > this.lastId) this.deliver(event, undefined);
      }
      if (page.length < this.options.pageSize || this.stopped) return;
    }
  }
}
