import { createInbox, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { CodedError } from '@svc/protocol';

/** A reply this inbox waits for: where the request asks for it, and the reply once it comes. */
export interface ExpectedReply {
  /** The subject to publish the request with as its reply subject. */
  reply: string;
  /**
   * The reply message (a "no responders" status included: see `isNoResponders`); rejects with
   * `timeout` (describing the request as `describe` says) when none comes in time, and with
   * `unavailable` when the connection closes first.
   */
  answer: Promise<Msg>;
  /** The request could not be sent: stop waiting, with this error. */
  fail(err: Error): void;
}

export interface ReplyInbox {
  expect(timeoutMs: number, describe: () => string): ExpectedReply;
  /** Whether the connection is up: while it is not, no reply can come, so do not ask. */
  connected(): boolean;
}

/** The error of a request or publish made, or waiting, while NATS is unreachable. */
export const busUnavailable = (what = 'the request'): CodedError =>
  new CodedError('bus_unavailable', `NATS is unreachable, so ${what} could not be answered; retry shortly`);

interface Waiting {
  deadline: number;
  describe(): string;
  resolve(msg: Msg): void;
  reject(err: Error): void;
}

/** How often overdue replies are failed: timeouts are seconds long, this is their precision. */
const SWEEP_MS = 50;

const inboxes = new WeakMap<NatsConnection, ReplyInbox>();

/**
 * The connection's one reply inbox: every reply comes back on one wildcard subscription and is
 * matched by its last token, and one sweep fails the overdue ones — the way the Go client's
 * PublishAsync works. The client's own `request` makes, for every request, a timer, a promise
 * race and two Error objects (one to carry a stack, one to reject the settled promise with), a
 * measurable part of a gateway request (docs/benchmarks.md#ingest).
 */
export function replyInboxOf(nc: NatsConnection): ReplyInbox {
  let inbox = inboxes.get(nc);
  if (!inbox) {
    inbox = createReplyInbox(nc);
    inboxes.set(nc, inbox);
  }
  return inbox;
}

function createReplyInbox(nc: NatsConnection): ReplyInbox {
  const prefix = `${createInbox()}.`;
  // By timeout, so that each map's insertion order is its deadline order and the sweep stops at
  // the first entry still in time. A token is `<n>-<timeout>`, naming its map.
  const waiting = new Map<number, Map<string, Waiting>>();
  let next = 0;
  let sweep: NodeJS.Timeout | undefined;

  function take(token: string): Waiting | undefined {
    const byToken = waiting.get(Number(token.slice(token.indexOf('-') + 1)));
    const entry = byToken?.get(token);
    byToken?.delete(token);
    return entry;
  }

  const subscription = nc.subscribe(`${prefix}*`, {
    // An entry no longer waiting was answered after its deadline.
    callback: (_err, msg) => take(msg.subject.slice(prefix.length))?.resolve(msg),
  });
  void subscription.closed.finally(() => {
    for (const byToken of waiting.values()) {
      for (const entry of byToken.values())
        entry.reject(new CodedError('bus_unavailable', `the NATS connection closed before ${entry.describe()} was answered`));
    }
    waiting.clear();
    clearInterval(sweep);
  });

  // When the connection drops, no reply will come to what is waiting: fail it now rather than
  // at its deadline (a request sent just before may still be carried out; its retry is safe).
  let connected = !nc.isClosed();
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect' || status.type === 'reconnecting') {
        if (connected) {
          for (const byToken of waiting.values()) {
            for (const entry of byToken.values()) entry.reject(busUnavailable(entry.describe()));
            byToken.clear();
          }
        }
        connected = false;
      } else if (status.type === 'reconnect') {
        connected = true;
      }
    }
  })();

  function sweepOverdue(): void {
    const now = Date.now();
    let left = 0;
    for (const byToken of waiting.values()) {
      for (const [token, entry] of byToken) {
        if (entry.deadline > now) break;
        byToken.delete(token);
        entry.reject(new CodedError('timeout', `no answer to ${entry.describe()} in time`));
      }
      left += byToken.size;
    }
    if (left === 0) {
      clearInterval(sweep);
      sweep = undefined;
    }
  }

  return {
    expect(requestedMs, describe) {
      // A whole number: the token is a subject token, where a dot would start another.
      const timeoutMs = Math.max(1, Math.round(requestedMs));
      const token = `${(next++).toString(36)}-${timeoutMs}`;
      let byToken = waiting.get(timeoutMs);
      if (!byToken) {
        byToken = new Map();
        waiting.set(timeoutMs, byToken);
      }
      const entries = byToken;
      const answer = new Promise<Msg>((resolve, reject) => {
        entries.set(token, { deadline: Date.now() + timeoutMs, describe, resolve, reject });
      });
      if (!sweep) {
        sweep = setInterval(sweepOverdue, SWEEP_MS);
        sweep.unref();
      }
      return { reply: `${prefix}${token}`, answer, fail: (err) => take(token)?.reject(err) };
    },
    connected: () => connected && !nc.isClosed(),
  };
}

/** The server's answer when nobody subscribes to a request's subject (status 503, no payload). */
export function isNoResponders(msg: Msg): boolean {
  return msg.data.length === 0 && msg.headers?.code === 503;
}
