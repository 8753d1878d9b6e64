import type { JsMsg } from '@svc/bus';

/** The longest an acknowledgement waits for an announcement to travel with. */
const ACK_LINGER_MS = 20;

export interface Acknowledgements {
  /** Messages stored and announced: acknowledged with the next announcement, or within `ACK_LINGER_MS`. */
  add(msgs: readonly JsMsg[]): void;
  /** Acknowledges every waiting message now (in this turn: with whatever else is published in it). */
  flush(): void;
}

/**
 * The acknowledgements of one replica's partitions, sent together with its announcements.
 * Each stored batch costs event-ingest a NATS write for its announcement and one for its
 * acknowledgements: at moderate rates (one event per batch) that is about two writes per event,
 * and on a small VM each write that wakes nats-server costs the writer noticeable CPU
 * (docs/benchmarks.md#hop-floor, #ingest). The announcer calls `flush` just before it publishes, so the waiting
 * acknowledgements of every partition leave in that publish's socket write (the NATS client
 * writes what it is handed in one synchronous run at once, in a microtask after it); when no
 * announcement follows, they leave after `ACK_LINGER_MS`.
 *
 * Only messages whose events are stored and announced are added: acknowledging them later never
 * loses anything, and a replica that dies before sending them has them delivered again, to be
 * found stored and announced once more (followers skip ids they have).
 */
export function createAcknowledgements(lingerMs = ACK_LINGER_MS): Acknowledgements {
  let waiting: JsMsg[] = [];
  let timer: NodeJS.Timeout | undefined;

  function flush(): void {
    clearTimeout(timer);
    timer = undefined;
    const acks = waiting;
    waiting = [];
    for (const msg of acks) msg.ack();
  }

  return {
    add(msgs) {
      if (msgs.length === 0) return;
      waiting.push(...msgs);
      if (!timer) {
        timer = setTimeout(flush, lingerMs);
        timer.unref();
      }
    },
    flush,
  };
}
