import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import { CodedError, headers } from '@svc/protocol';
import { decode, encode, headersWith } from './codec.js';
import type { SendOptions } from './messaging.js';
import { busUnavailable, isNoResponders, replyInboxOf, type ExpectedReply } from './reply-inbox.js';

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
   * `immediate` hands it to the connection now (after anything still waiting for the end of the
   * turn) instead of with the turn's other messages: it then shares a socket write with whatever
   * the caller sends next in this turn.
   */
  publish(subject: string, payload: unknown, options: SendOptions & { messageId: string; immediate?: boolean }): Promise<DurableAck>;
  /** Stops listening; publishes still waiting are rejected. */
  close(): void;
}

type PubAckReply = { stream: string; seq: number; duplicate?: boolean } | { error: { code: number; description: string } };

/**
 * JetStream publishing for hot paths (every event goes through it twice). The client's own
 * `js.publish` is a full request per message: a fresh reply subscription entry, a timer, a
 * promise race and an Error object built on every success. Here acks come back on the
 * connection's reply inbox (`replyInboxOf`). Messages go out in call order on one connection,
 * so a stream keeps the caller's order.
 */
export function createDurablePublisher(nc: NatsConnection, options: { timeoutMs?: number } = {}): DurablePublisher {
  const timeoutMs = options.timeoutMs ?? 5000;
  const inbox = replyInboxOf(nc);
  const unacked = new Set<ExpectedReply>();

  // Messages wait for the end of the event-loop turn and go out together: the client writes to
  // its socket once per batch it is handed, and the requests a server reads in one turn (each
  // its own callback) would otherwise cost a write each — a large share of a busy gateway's CPU
  // (docs/benchmarks.md#ingest).
  let outbox: Array<{ subject: string; data: Uint8Array; headers: MsgHdrs; expected: ExpectedReply }> = [];
  function sendOutbox(): void {
    const sending = outbox;
    outbox = [];
    for (const message of sending) {
      try {
        nc.publish(message.subject, message.data, { reply: message.expected.reply, headers: message.headers });
      } catch (err) {
        message.expected.fail(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }

  async function acked(subject: string, expected: ExpectedReply): Promise<DurableAck> {
    try {
      const msg = await expected.answer;
      if (isNoResponders(msg)) throw new CodedError('unavailable', `no JetStream stream takes ${subject}`);
      const reply = decode(msg.data) as PubAckReply;
      if ('error' in reply) throw new CodedError('unavailable', `JetStream refused a message on ${subject}: ${reply.error.description}`);
      return { stream: reply.stream, seq: reply.seq, duplicate: reply.duplicate === true };
    } finally {
      unacked.delete(expected);
    }
  }

  return {
    publish(subject, payload, { messageId, requestId, immediate, trace }) {
      // Without NATS no ack can come: fail now rather than after the timeout (waiting publishes
      // fail when the connection drops; a message that reached the stream first is kept once,
      // since the caller's retry carries the same message id).
      if (!inbox.connected()) return Promise.reject(busUnavailable(`a JetStream publish on ${subject}`));
      const expected = inbox.expect(timeoutMs, () => `a JetStream publish on ${subject}`);
      unacked.add(expected);
      outbox.push({ subject, data: encode(payload), headers: headersWith(requestId, { [headers.messageId]: messageId }, trace)!, expected });
      if (immediate) sendOutbox();
      else if (outbox.length === 1) setImmediate(sendOutbox);
      return acked(subject, expected);
    },
    close() {
      for (const expected of unacked) expected.fail(new CodedError('unavailable', 'the publisher closed before JetStream acked the message'));
      unacked.clear();
    },
  };
}
