import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { CodedError, headers, isErrorCode, type RpcReply, type SchemaChecker, describeFieldErrors } from '@svc/protocol';
import type { Context, Logger } from '@svc/service-kit';
import { decode, encode, headersWith } from './codec.js';
import { busUnavailable, isNoResponders, replyInboxOf } from './reply-inbox.js';

/** What a handler learns about the message besides its payload. */
export interface MessageContext {
  subject: string;
  /** The request id of the HTTP request that caused this message, when there was one. */
  requestId: string | undefined;
}

export interface SendOptions {
  requestId?: string | undefined;
  /** The trace this message continues (docs/tracing.md): its context travels in the headers. */
  trace?: Context | undefined;
}

/** What a request handler also gets: a way to act once the reply is on its way. */
export interface RpcContext extends MessageContext {
  /**
   * Runs `task` right after the reply is handed to the connection, in the same turn: a message
   * the task publishes goes out in the same socket write as the reply.
   */
  afterReply(task: () => void): void;
}

function contextOf(msg: Msg): MessageContext {
  return { subject: msg.subject, requestId: msg.headers?.get(headers.requestId) || undefined };
}

/** Publishes a JSON payload on core NATS (fire and forget), carrying the request id. */
export function publishJson(nc: NatsConnection, subject: string, payload: unknown, options: SendOptions = {}): void {
  const h = headersWith(options.requestId, {}, options.trace);
  nc.publish(subject, encode(payload), h ? { headers: h } : {});
}

export interface RequestOptions extends SendOptions {
  /** How long to wait for the answer, per attempt (default 5 s). */
  timeoutMs?: number;
  /**
   * For requests that change nothing (queries): how many times to send again after no answer
   * in time or no service listening. A replica that died with the request in hand never
   * answers; another one will. Never use it for a request that changes state.
   */
  retries?: number;
}

/** Pause before a retry: a restarting replica needs a moment to subscribe again. */
const RETRY_PAUSE_MS = 100;

/**
 * Sends a request and returns the result of the `RpcReply`. A coded error from the service is
 * re-thrown as `CodedError`; no service listening is `unavailable`, no answer in time is `timeout`.
 */
export async function requestJson<Result>(nc: NatsConnection, subject: string, payload: unknown, options: RequestOptions = {}): Promise<Result> {
  const h = headersWith(options.requestId, {}, options.trace);
  const data = encode(payload);
  const inbox = replyInboxOf(nc);
  let msg: Msg;
  for (let attempt = 0; ; attempt++) {
    // Nobody can answer while NATS is unreachable: say so now, not after the timeout.
    if (!inbox.connected()) throw busUnavailable(`a request on ${subject}`);
    const expected = inbox.expect(options.timeoutMs ?? 5000, () => `a request on ${subject}`);
    try {
      nc.publish(subject, data, { reply: expected.reply, ...(h ? { headers: h } : {}) });
    } catch (err) {
      expected.fail(err instanceof Error ? err : new Error(String(err)));
    }
    let failure: CodedError;
    try {
      msg = await expected.answer;
      if (!isNoResponders(msg)) break;
      failure = new CodedError('unavailable', `no service answers ${subject}`);
    } catch (err) {
      if (!(err instanceof CodedError && err.code === 'timeout')) throw err;
      failure = new CodedError('timeout', `no answer on ${subject} in time`, undefined, { cause: err });
    }
    if (attempt >= (options.retries ?? 0)) throw failure;
    await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS));
  }
  const reply = decode(msg.data) as RpcReply<Result>;
  if (reply.ok) return reply.result;
  const code = isErrorCode(reply.error.code) ? reply.error.code : 'internal';
  throw new CodedError(code, reply.error.message, reply.error.details);
}

export interface ServeOptions<Request> {
  logger: Logger;
  /** Replicas in one queue group share the requests (each request is answered once). */
  queue?: string;
  /** Validates the request payload; an invalid one is answered `invalid_request` naming the fields. */
  checker?: SchemaChecker<Request>;
}

/**
 * Answers requests on `subject` with an `RpcReply`. A `CodedError` thrown by the handler goes back
 * as that code; anything else is logged and answered `internal` without its details.
 */
export function serveRpc<Request, Result>(
  nc: NatsConnection,
  subject: string,
  handler: (request: Request, context: RpcContext) => Promise<Result> | Result,
  options: ServeOptions<Request>,
): Subscription {
  const log = options.logger.child({ component: 'rpc', subject });
  return subscribeMessages(nc, subject, options.queue, log, (msg) => void answer(msg));

  async function answer(msg: Msg): Promise<void> {
    const afterReply: Array<() => void> = [];
    const context: RpcContext = { ...contextOf(msg), afterReply: (task) => void afterReply.push(task) };
    let reply: RpcReply<Result>;
    try {
      let request = decode(msg.data) as Request;
      if (options.checker) {
        const checked = options.checker.check(request);
        if (!checked.ok) throw new CodedError('invalid_request', describeFieldErrors(checked.errors), checked.errors);
        request = checked.value;
      }
      reply = { ok: true, result: await handler(request, context) };
    } catch (err) {
      if (err instanceof CodedError) {
        reply = { ok: false, error: err.toBody() };
      } else if (err instanceof SyntaxError) {
        reply = { ok: false, error: { code: 'invalid_request', message: 'the request is not valid JSON' } };
      } else {
        log.error({ err, request_id: context.requestId }, 'request handler failed');
        reply = { ok: false, error: { code: 'internal', message: 'internal error' } };
      }
    }
    if (msg.reply) msg.respond(encode(reply));
    for (const task of afterReply) {
      try {
        task();
      } catch (err) {
        log.error({ err, request_id: context.requestId }, 'a task after the reply failed');
      }
    }
  }
}

/** Subscribes to JSON messages; a handler's failure is logged and the subscription goes on. */
export function subscribeJson<Payload>(
  nc: NatsConnection,
  subject: string,
  handler: (payload: Payload, context: MessageContext) => Promise<void> | void,
  options: { logger: Logger; queue?: string },
): Subscription {
  const log = options.logger.child({ component: 'subscriber', subject });
  return subscribeMessages(nc, subject, options.queue, log, (msg) => {
    Promise.resolve()
      .then(() => handler(decode(msg.data) as Payload, contextOf(msg)))
      .catch((handlerError: unknown) => log.error({ err: handlerError, request_id: contextOf(msg).requestId }, 'message handler failed'));
  });
}

/** A core subscription (in a queue group when given) whose errors are logged, never thrown. */
function subscribeMessages(nc: NatsConnection, subject: string, queue: string | undefined, log: Logger, onMessage: (msg: Msg) => void): Subscription {
  return nc.subscribe(subject, {
    ...(queue ? { queue } : {}),
    callback: (err, msg) => {
      if (err) log.error({ err }, 'subscription failed');
      else onMessage(msg);
    },
  });
}

/** Decodes the JSON payload of a message. */
export function decodeJson<T>(msg: { data: Uint8Array }): T {
  return decode(msg.data) as T;
}
