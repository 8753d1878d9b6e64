import {
  consumeIncomingPartition,
  consumeLasting,
  decodeJson,
  PARTITION_ACK_WAIT_MS,
  type JsMsg,
  type LastingConsumption,
  type NatsConnection,
} from '@svc/bus';
import {
  CodedError,
  createChecker,
  EventSourceSchema,
  validateIncomingEvent,
  WORKER_POLICY_SOURCE,
  type EventSource,
  type IncomingMessageType,
  type StoredEvent,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import { isStoreUnavailable, type AppendResult, type EventToAppend, type WorkerEvents } from '@svc/store';
import type { Acknowledgements } from './acknowledgements.js';
import type { Announcer } from './announcer.js';
import { BatchTrace } from './batch-trace.js';
import { ingestMetrics } from './metrics.js';
import type { Appender } from './group-commit.js';

/** Most messages appended in one go (per partition)... */
const MAX_BATCH = 500;
/** ...and most bytes of them (at least one message): a gathered message holds many events. */
const MAX_BATCH_BYTES = 1024 * 1024;
/** The longest pause between two tries of a failed append. */
const APPEND_RETRY_MAX_MS = 1000;
/** Messages (and bytes) taken from JetStream but not yet stored; past this the consumer stops pulling. */
const MAX_BUFFERED = 2 * MAX_BATCH;
const MAX_BUFFERED_BYTES = 4 * MAX_BATCH_BYTES;

const isEventSource = createChecker<string>(EventSourceSchema);

export interface PartitionConsumer {
  /**
   * Runs `write` in the partition's turn: after the batch being stored (and announced), before
   * the next, so that the partition's events are stored and announced in one order by one
   * writer. Resolves with what `write` answers, as soon as it answers; its `afterwards` (the
   * announcement) still holds the partition's next batch until done.
   */
  inTurn<T>(write: () => Promise<TurnResult<T>>): Promise<T>;
  stop(): Promise<void>;
}

export interface TurnResult<T> {
  answer: T;
  afterwards?: () => Promise<void>;
}

/** One worker's share of a batch: the events to append and the messages that brought them. */
interface WorkerShare {
  workerId: string;
  incoming: EventToAppend[];
  msgs: JsMsg[];
}

/**
 * Consumes one partition of incoming messages in order, a batch at a time, in four steps:
 * `sortByWorker` (decode and check each message), `store` (every worker's events in one
 * transaction, retried until it succeeds), `announce` (each worker's stored events, after commit,
 * through the one announcer) and `acknowledge`. Nothing is acknowledged before it is stored and
 * announced, so a crash at any point redelivers it.
 */
export async function consumePartition(
  nc: NatsConnection,
  store: Appender,
  announcer: Announcer,
  acknowledgements: Acknowledgements,
  partition: number,
  logger: Logger,
): Promise<PartitionConsumer> {
  const consumer = new IncomingPartition(store, announcer, acknowledgements, logger.child({ partition }));
  await consumer.start(nc, partition);
  return consumer;
}

class IncomingPartition implements PartitionConsumer {
  private readonly buffer: JsMsg[] = [];
  private bufferedBytes = 0;
  private consumption: LastingConsumption | undefined;
  private draining: Promise<void> | undefined;
  private bufferHasRoom: (() => void) | undefined;
  private stopping = false;
  /** Writes waiting for their turn (`inTurn`). */
  private readonly turns: Array<{ run(): Promise<void>; refuse(err: unknown): void }> = [];

  constructor(
    private readonly store: Appender,
    private readonly announcer: Announcer,
    // Stored and announced batches are acknowledged with the replica's next announcement (acknowledgements.ts).
    private readonly acknowledgements: Acknowledgements,
    private readonly log: Logger,
  ) {}

  async start(nc: NatsConnection, partition: number): Promise<void> {
    // Messages taken but not yet in a batch when the consumer is lost are let go: the new
    // consumer delivers them again, first and in order (a work queue keeps what is not acknowledged).
    this.consumption = await consumeLasting(
      () => consumeIncomingPartition(nc, partition),
      async (msg) => {
        this.buffer.push(msg);
        this.bufferedBytes += msg.data.length;
        this.kick();
        // Back-pressure: while the store is slow (or down), stop pulling rather than pile up
        // messages whose ack deadline would pass before they are stored.
        if (this.buffer.length >= MAX_BUFFERED || this.bufferedBytes >= MAX_BUFFERED_BYTES)
          await new Promise<void>((resolve) => (this.bufferHasRoom = resolve));
      },
      {
        logger: this.log,
        what: `partition ${partition}`,
        onReopen: () => {
          this.buffer.length = 0;
          this.bufferedBytes = 0;
        },
      },
    );
  }

  async stop(): Promise<void> {
    // The batch being stored finishes (or, failing, is left unacknowledged for redelivery);
    // nothing new is taken.
    this.stopping = true;
    this.bufferHasRoom?.();
    await this.consumption?.stop();
    await this.draining;
    for (const turn of this.turns.splice(0)) turn.refuse(new CodedError('unavailable', 'event-ingest is stopping; try again'));
  }

  inTurn<T>(write: () => Promise<TurnResult<T>>): Promise<T> {
    if (this.stopping) return Promise.reject(new CodedError('unavailable', 'event-ingest is stopping; try again'));
    return new Promise<T>((resolve, reject) => {
      this.turns.push({
        refuse: reject,
        run: async () => {
          let result: TurnResult<T>;
          try {
            result = await write();
          } catch (err) {
            return reject(err);
          }
          // The answer leaves first: the person's POST waits on it through the control service,
          // the longer of a decision's two roads (the long poll hears the announcement).
          resolve(result.answer);
          await new Promise((resolve) => setImmediate(resolve));
          await result
            .afterwards?.()
            .catch((err: unknown) => this.log.warn({ err }, 'a write was stored but its announcement failed; followers read it from the store'));
        },
      });
      this.kick();
    });
  }

  private kick(): void {
    if (this.draining) return;
    this.draining = (async () => {
      // Let the rest of this turn's messages (one socket read brings many) join the first batch.
      if (this.buffer.length > 0) await new Promise((resolve) => setImmediate(resolve));
      while ((this.buffer.length > 0 || this.turns.length > 0) && !this.stopping) {
        for (const turn of this.turns.splice(0)) await turn.run();
        if (this.buffer.length === 0) continue;
        const batch = this.takeBatch();
        this.bufferHasRoom?.();
        await this.process(batch);
      }
    })()
      .catch((err: unknown) => this.log.error({ err }, 'partition processing stopped'))
      .finally(() => {
        this.draining = undefined;
        if ((this.buffer.length > 0 || this.turns.length > 0) && !this.stopping) this.kick();
      });
  }

  /** The next messages to append: up to MAX_BATCH of them and MAX_BATCH_BYTES (at least one). */
  private takeBatch(): JsMsg[] {
    let count = 0;
    let bytes = 0;
    while (count < this.buffer.length && count < MAX_BATCH && (count === 0 || bytes + this.buffer[count]!.data.length <= MAX_BATCH_BYTES)) {
      bytes += this.buffer[count]!.data.length;
      count++;
    }
    this.bufferedBytes -= bytes;
    return this.buffer.splice(0, count);
  }

  private async process(batch: JsMsg[]): Promise<void> {
    const { shares, accepted } = this.sortByWorker(batch);
    const trace = BatchTrace.of(shares);
    // While the batch is stored (a store outage can make that minutes), JetStream is told it is in hand.
    const inHand = setInterval(() => batch.forEach((msg) => msg.working()), PARTITION_ACK_WAIT_MS / 3);
    try {
      const appendStarted = Date.now();
      const stored = await this.storeWithRetry(shares);
      trace?.appended(appendStarted);
      await Promise.all(
        shares.map(async (share, index) => {
          const events = stored[index]!;
          if (trace) await trace.announcing(index, (context) => this.announcer.announce(share.workerId, events, context));
          else await this.announcer.announce(share.workerId, events);
        }),
      );
      // Announced before acknowledged (a gathered message may hold several workers' events: it is
      // acknowledged once all are announced): a crash in between redelivers the messages, and the
      // announcements are made again (acknowledging first could lose them for good).
      this.acknowledgements.add(accepted);
      trace?.end();
    } catch (err) {
      trace?.end(err);
      throw err;
    } finally {
      clearInterval(inHand);
    }
  }

  /**
   * Decodes and checks each message, its events grouped by worker in the order received (a
   * gathered message's events join their workers' shares in place); a message that is not JSON
   * or fails the protocol is dropped for good, as is a gathered message's event that fails it.
   */
  private sortByWorker(batch: JsMsg[]): { shares: WorkerShare[]; accepted: JsMsg[] } {
    const shares = new Map<string, WorkerShare>();
    const accepted: JsMsg[] = [];
    const shareOf = (workerId: string, msg: JsMsg) => {
      let share = shares.get(workerId);
      if (!share) shares.set(workerId, (share = { workerId, incoming: [], msgs: [] }));
      if (share.msgs.at(-1) !== msg) share.msgs.push(msg);
      return share;
    };
    for (const msg of batch) {
      let payload: IncomingMessageType;
      try {
        payload = decodeJson<IncomingMessageType>(msg);
      } catch {
        this.log.error({ seq: msg.seq }, 'dropping an incoming message that is not JSON');
        msg.term('not JSON');
        continue;
      }
      // One event, or a gathered message of several: each event that fails the protocol is
      // dropped; a message with none that passes is dropped for good.
      const entries: unknown[] = 'events' in payload ? (Array.isArray(payload.events) ? payload.events : []) : [payload];
      let kept = 0;
      for (const entry of entries) {
        // The envelope is trusted (only the gateway and our services may publish here), the event checked.
        const workerId = typeof entry === 'object' && entry !== null ? (entry as { worker_id?: unknown }).worker_id : undefined;
        const checked = typeof workerId === 'string' ? validateIncomingEvent((entry as { event: unknown }).event) : undefined;
        const source = (entry as { source?: unknown }).source;
        if (!checked?.ok || (source !== undefined && !isEventSource.check(source).ok)) {
          this.log.error({ seq: msg.seq, worker_id: workerId }, 'dropping an incoming event that fails the protocol');
          continue;
        }
        // A message without a source is an older publisher's: the worker's (docs/protocol.md, "Sources").
        shareOf(workerId as string, msg).incoming.push(source === undefined ? checked.value : { ...checked.value, source: source as EventSource });
        kept++;
      }
      if (kept === 0) {
        msg.term('invalid event');
        continue;
      }
      accepted.push(msg);
    }
    return { shares: [...shares.values()], accepted };
  }

  /** Every worker's events in one transaction (one commit, however many workers), tried until it succeeds. */
  private async storeWithRetry(shares: WorkerShare[]): Promise<StoredEvent[][]> {
    const batches: WorkerEvents[] = shares.map((share) => ({ workerId: share.workerId, events: share.incoming }));
    for (let attempt = 0; ; attempt++) {
      try {
        // Events already stored come back as they are stored and are announced again: a replica
        // that crashed between commit and announcement left them unannounced, and the redelivery
        // is the only chance to make up for it. Followers skip ids they have.
        const started = performance.now();
        const results = await this.store.appendMany(batches);
        ingestMetrics.appendSeconds.observe((performance.now() - started) / 1000);
        countStored(results.flat());
        return results.map((shareResults) => shareResults.map((r) => r.event));
      } catch (err) {
        ingestMetrics.appendFailures.inc();
        if (this.stopping) throw err;
        // Postgres away (restarting, failing over) is waited out; the pause stays short so
        // storage resumes within about a second of the database coming back.
        if (isStoreUnavailable(err))
          this.log.warn({ err: { message: (err as Error).message }, workers: batches.length, attempt }, 'the store is unavailable; retrying the batch');
        else this.log.error({ err, workers: batches.length, attempt }, 'append failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(APPEND_RETRY_MAX_MS, 50 * 2 ** attempt)));
      }
    }
  }
}

/** New events only (a redelivery's events come back as duplicates); the sidecar's own decisions among them are the policy's. */
function countStored(results: readonly AppendResult[]): void {
  let fresh = 0;
  for (const { event, duplicate } of results) {
    if (duplicate) continue;
    fresh++;
    if (event.type === 'control_response' && event.source === WORKER_POLICY_SOURCE) ingestMetrics.policyDecisions.inc({ decided_by: 'policy' });
  }
  ingestMetrics.stored.inc(fresh);
}
