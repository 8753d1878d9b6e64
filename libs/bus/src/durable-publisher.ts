import { createInbox, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { CodedError, headers } from '@svc/protocol';
import { decode, encode, headersWith } from './codec.js';
import type { SendOptions } from './messaging.js';

/** JetStream's answer to a publish: where the message is kept, or that it was a repeat. */
export interface DurableAck {
  stream: string;
  seq: number;
  /** A message with this `Nats-Msg-Id` was already in the stream's duplicate window. */
  duplicate: boolean;
}

export interface DurablePublisher {
  /**
   * Publishes to JetStream and resolves with the ack (the message is durable). `messageId`
   * becomes `Nats-Msg-Id`. No stream for the subject is `unavailable`; no ack in time is `timeout`.
   */
  publish(subject: string, payload: unknown, options: SendOptions & { messageId: string }): Promise<DurableAck>;
  /** Stops listening; publishes still waiting are rejected. */
  close(): void;
}

interface Waiting {
  subject: string;
  deadline: number;
  resolve(ack: DurableAck): void;
  reject(err: Error): void;
}

type PubAckReply = { stream: string; seq: number; duplicate?: boolean } | { error: { code: number; description: string } };

/**
 * JetStream publishing for hot paths (every event goes through it twice). The client's own
 * `js.publish` is a full request per message: a fresh reply subscription entry, a timer, a
 * promise race and an Error object built on every success. Here all acks come back on one
 * wildcard inbox, matched by token, and one sweep a tenth of a second fails the overdue ones —
 * the way the Go client's PublishAsync works. Messages go out in call order on one connection,
 * so a stream keeps the caller's order.
 */
export function createDurablePublisher(nc: NatsConnection, options: { timeoutMs?: number } = {}): DurablePublisher {
  const timeoutMs = options.timeoutMs ?? 5000;
  const prefix = `${createInbox()}.`;
  // Insertion order is deadline order (one timeout for all), so the sweep stops at the first live one.
  const waiting = new Map<string, Waiting>();
  let next = 0;

  // Messages wait for the end of the event-loop turn and go out together: the client writes to
  // its socket once per batch it is handed, and the requests a server reads in one turn (each
  // its own callback) would otherwise cost a write each — a quarter of a busy gateway's CPU.
  let outbox: Array<{ token: string; subject: string; data: Uint8Array; headers: MsgHdrs }> = [];
  function sendOutbox(): void {
    const sending = outbox;
    outbox = [];
    for (const message of sending) {
      try {
        nc.publish(message.subject, message.data, { reply: `${prefix}${message.token}`, headers: message.headers });
      } catch (err) {
        const entry = waiting.get(message.token);
        waiting.delete(message.token);
        entry?.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  const subscription = nc.subscribe(`${prefix}*`, { callback: (_err, msg) => settle(msg) });

  function settle(msg: Msg): void {
    const token = msg.subject.slice(prefix.length);
    const entry = waiting.get(token);
    if (!entry) return; // answered after its deadline
    waiting.delete(token);
    if (msg.data.length === 0 && msg.headers?.code === 503) {
      entry.reject(new CodedError('unavailable', `no JetStream stream takes ${entry.subject}`));
      return;
    }
    const reply = decode(msg.data) as PubAckReply;
    if ('error' in reply) entry.reject(new CodedError('unavailable', `JetStream refused a message on ${entry.subject}: ${reply.error.description}`));
    else entry.resolve({ stream: reply.stream, seq: reply.seq, duplicate: reply.duplicate === true });
  }

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [token, entry] of waiting) {
      if (entry.deadline > now) break;
      waiting.delete(token);
      entry.reject(new CodedError('timeout', `no JetStream ack for a message on ${entry.subject} in time`));
    }
  }, 100);
  sweep.unref();

  return {
    publish(subject, payload, { messageId, requestId }) {
      const token = (next++).toString(36);
      return new Promise<DurableAck>((resolve, reject) => {
        waiting.set(token, { subject, deadline: Date.now() + timeoutMs, resolve, reject });
        outbox.push({ token, subject, data: encode(payload), headers: headersWith(requestId, { [headers.messageId]: messageId })! });
        if (outbox.length === 1) setImmediate(sendOutbox);
      });
    },
    close() {
      clearInterval(sweep);
      subscription.unsubscribe();
      for (const entry of waiting.values()) entry.reject(new CodedError('unavailable', `the publisher closed before JetStream acked a message on ${entry.subject}`));
      waiting.clear();
    },
  };
}
