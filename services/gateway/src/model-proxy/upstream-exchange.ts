import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { FastifyRequest } from 'fastify';
import type { MeasuredTokens, ModelApi } from '@svc/protocol';
import { counter } from '@svc/service-kit';
import { relayAnswer } from './answer-relay.js';
import type { GivenUpRequests } from './given-up-requests.js';
import { KEPT_ANSWER_MS, type AnswerRecording, type KeptAnswers } from './kept-answers.js';
import { providerError } from './provider-errors.js';
import { upstreamFailedEvent, type RecordEvent } from './proxy-events.js';
import type { ModelRequestBody } from './request-body.js';
import type { ModelRequestLine } from './request-policy.js';
import { createUsageMeter } from './usage-meter.js';
import type { UsageRecorder } from './usage-recorder.js';

/** Where the control plane sends one model API's traffic, and the key it adds (never seen by a sandbox). */
export interface ModelUpstream {
  url: string;
  apiKey: string | undefined;
}

/** What every exchange shares: the connections to the upstreams, the usage it adds to, the history it records in. */
export interface ExchangeParts {
  agents: { http: http.Agent; https: https.Agent };
  usage: UsageRecorder;
  record: RecordEvent;
  /** Answers whose agent went away before their end, kept for the same request sent again. */
  kept: KeptAnswers;
  /** Requests in flight by their sidecar's id, let go when the sidecar says its agent gave them up. */
  givenUp: GivenUpRequests;
}

/** One checked request, ready to go upstream, and the agent's response it is answered on. */
export interface Exchange {
  request: FastifyRequest;
  response: http.ServerResponse;
  workerId: string;
  api: ModelApi;
  upstream: { url: string; apiKey: string };
  line: ModelRequestLine;
  headers: OutgoingHttpHeaders;
  body: ModelRequestBody;
  budgeted: boolean;
  /** The id the worker's sidecar gave the request (`MODEL_REQUEST_ID_HEADER`), when it gave one. */
  requestId: string | undefined;
  /** Gives back the request's budget reservation (once its usage is counted). */
  release(): void;
}

export const modelBytes = counter({
  name: 'svc_model_proxy_bytes_total',
  help: "Bytes through the model proxy, by worker, API, and direction (sent: the agent's requests; received: the model's answers).",
  labelNames: ['worker_id', 'api', 'direction'],
});

/** Hop-by-hop headers (RFC 9110 §7.6.1) and cookies: never passed back to the agent. */
const DROPPED_RESPONSE_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'set-cookie',
]);

/** How each API takes its key. */
const KEY_HEADERS: Record<ModelApi, (key: string) => OutgoingHttpHeaders> = {
  anthropic: (key) => ({ 'x-api-key': key }),
  openai: (key) => ({ authorization: `Bearer ${key}` }),
  gemini: (key) => ({ 'x-goog-api-key': key }),
};

function forwardedHeaders(incoming: IncomingHttpHeaders, dropped: ReadonlySet<string>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) if (value !== undefined && !dropped.has(name)) out[name] = value;
  return out;
}

/** The decoders of the encodings an upstream may answer in despite `identity` (the meter reads decoded text). */
const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: () => zlib.createGunzip(),
  'x-gzip': () => zlib.createGunzip(),
  deflate: () => zlib.createInflate(),
  br: () => zlib.createBrotliDecompress(),
};

/** The answer's body, decoded: itself when not encoded, undefined in an encoding the proxy cannot read. */
function decodedBody(answer: IncomingMessage): Readable | undefined {
  const encoding = String(answer.headers['content-encoding'] ?? 'identity')
    .trim()
    .toLowerCase();
  if (encoding === 'identity' || encoding === '') return answer;
  const decoder = DECODERS[encoding];
  if (!decoder) return undefined;
  // A broken-off answer destroys the decoder too (it then closes without ending).
  return pipeline(answer, decoder(), () => undefined) as unknown as Readable;
}

/** Counts an exchange's usage once, however it ends; `forwarded: false` (nothing reached the upstream) only gives the reservation back. */
type CountUsage = (tokens: MeasuredTokens | undefined, forwarded: boolean) => void;

function usageCounter(parts: ExchangeParts, exchange: Exchange): CountUsage {
  let counted = false;
  return (tokens, forwarded) => {
    if (counted) return;
    counted = true;
    if (!forwarded) return exchange.release();
    // Released however the write goes, even if adding throws.
    void Promise.resolve()
      .then(() => parts.usage.add(exchange.workerId, exchange.api, tokens, exchange.budgeted))
      .finally(exchange.release);
  };
}

/**
 * What an answer the agent abandoned before it began may have cost: its input, and for a
 * non-streamed request its whole output (generated before the answer is sent).
 */
function abandonedCost(body: ModelRequestBody): MeasuredTokens | undefined {
  if (!body.costsTokens) return undefined;
  return {
    model: body.model,
    input_tokens: body.estimatedInputTokens,
    output_tokens: body.streamed ? 0 : body.outputCap,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
  };
}

/** The request to the upstream, with the control plane's key; throws when it cannot even be made (a bad upstream URL). */
function upstreamRequest(parts: ExchangeParts, exchange: Exchange): http.ClientRequest {
  const { upstream, line, body } = exchange;
  const base = new URL(upstream.url);
  const transport = base.protocol === 'https:' ? https : http;
  return transport.request({
    protocol: base.protocol,
    hostname: base.hostname,
    port: base.port,
    method: line.method,
    path: `${base.pathname.replace(/\/+$/, '')}${line.path}${line.query ? `?${line.query}` : ''}`,
    agent: base.protocol === 'https:' ? parts.agents.https : parts.agents.http,
    headers: {
      ...exchange.headers,
      host: base.host,
      // A compressed answer would hide its usage from a meter that reads text.
      'accept-encoding': 'identity',
      'content-length': body.bytes.length,
      ...KEY_HEADERS[exchange.api](upstream.apiKey),
    },
  });
}

/** Records in the worker's history why the upstream failed it (the agent is answered with `answerUnreachable`). */
function recordUpstreamFailure(parts: ExchangeParts, exchange: Exchange, reason: string): void {
  void parts.record(exchange.workerId, exchange.request.id, upstreamFailedEvent(exchange.api, reason));
}

/** Answers the agent in the provider's error shape. */
function answerUnreachable(exchange: Exchange, reason: string): void {
  const answer = providerError(exchange.api, 'unreachable', `svc: ${reason}`);
  exchange.response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
}

/** How the exchange stands with its agent: gone unsaid, its answer read on and kept (`recording`). */
interface AgentSide {
  recording: AnswerRecording | undefined;
  orphaned: boolean;
}

/** The events that end an answer as the API ends a successful one (an SSE stream can fail after its 200). */
const WHOLE_ANSWER_MARKS: Record<ModelApi, readonly string[]> = {
  anthropic: ['message_stop'],
  openai: ['response.completed', '[DONE]'],
  gemini: ['finishReason'],
};

/** Whether an answer that ended is whole: a body is; a stream when its last bytes hold the API's closing event, and no error. */
function isWholeAnswer(api: ModelApi, contentType: string | string[] | undefined, tail: string): boolean {
  if (!String(contentType ?? '').includes('text/event-stream')) return true;
  return WHOLE_ANSWER_MARKS[api].some((mark) => tail.includes(mark)) && !/event: ?error/.test(tail);
}

/** The larger of what the meter read and what the request may have cost: an answer the gateway cut, generated on upstream meanwhile. */
function atLeast(measured: MeasuredTokens | undefined, cost: MeasuredTokens | undefined): MeasuredTokens | undefined {
  if (!measured || !cost) return measured ?? cost;
  return { ...measured, input_tokens: Math.max(measured.input_tokens, cost.input_tokens), output_tokens: Math.max(measured.output_tokens, cost.output_tokens) };
}

/**
 * Streams the upstream's answer back to the agent as it comes, metering and recording it (for a
 * re-ask, if the agent goes); counts its usage when it ends or is cut short.
 */
function relayUpstreamAnswer(parts: ExchangeParts, exchange: Exchange, answer: IncomingMessage, count: CountUsage, side: AgentSide): void {
  const { response, workerId, api, body } = exchange;
  const { recording } = side;
  const status = answer.statusCode ?? 502;
  const decoded = decodedBody(answer);
  if (!decoded) {
    const reason = `the ${api} upstream answered in content-encoding ${String(answer.headers['content-encoding'])}, which the model proxy cannot meter`;
    recordUpstreamFailure(parts, exchange, reason);
    answer.destroy();
    recording?.drop();
    // Its cost is unknown: it is counted at what it could have cost.
    const unknown = abandonedCost(body);
    count(unknown && { ...unknown, output_tokens: body.outputCap }, true);
    return answerUnreachable(exchange, reason);
  }
  const meter = createUsageMeter(api, status, answer.headers['content-type'], {
    model: body.model,
    estimatedInputTokens: body.estimatedInputTokens,
    costsTokens: body.costsTokens,
  });
  const passedHeaders = forwardedHeaders(answer.headers, DROPPED_RESPONSE_HEADERS);
  if (decoded !== answer) {
    // The agent gets the decoded body: its length is no longer the upstream's.
    delete passedHeaders['content-encoding'];
    delete passedHeaders['content-length'];
  }
  if (!response.destroyed) response.writeHead(status, passedHeaders);
  // Only a successful answer is given to a re-ask: the client asks again after any other.
  if (status < 200 || status >= 300) recording?.drop();
  else recording?.begin(status, passedHeaders);
  let ended = false;
  let tail = '';
  relayAnswer(decoded, response, (chunk) => {
    modelBytes.inc({ worker_id: workerId, api, direction: 'received' }, chunk.length);
    meter.write(chunk);
    recording?.write(chunk);
    tail = (tail + chunk.toString('latin1')).slice(-4096);
  });
  decoded.on('error', () => response.destroy());
  decoded.on('end', () => {
    ended = true;
    response.end();
    recording?.end(isWholeAnswer(api, answer.headers['content-type'], tail));
    count(meter.end(), true);
  });
  // Closed without its end: the answer was cut short (by the agent, the upstream, or the gateway
  // letting go of one read on for a re-ask), and is metered from what passed — one the gateway
  // cut at no less than the request may have cost, since the upstream may have generated it all.
  // A token count cut short costs nothing still.
  decoded.on('close', () => {
    if (ended) return;
    response.destroy();
    recording?.drop();
    count(side.orphaned ? atLeast(meter.end(), abandonedCost(body)) : meter.end(), true);
  });
}

/**
 * Sends the checked request upstream and streams the answer back, metering it. Its usage is
 * counted exactly once, however it ends (answered, cut short by either side, never answered),
 * and the reservation is released after that count has landed. Throws, with nothing sent, when
 * the request cannot be made.
 */
export function forward(parts: ExchangeParts, exchange: Exchange): void {
  const { request, response, workerId, api } = exchange;
  const count = usageCounter(parts, exchange);
  const outgoing = upstreamRequest(parts, exchange);
  let sent = false;
  let answered = false;
  let agentGone = false;
  let orphanTimer: NodeJS.Timeout | undefined;
  const side: AgentSide = { recording: undefined, orphaned: false };
  const giveUp = () => {
    side.recording?.drop();
    outgoing.destroy();
  };
  // Only a sidecar's request (it has an id) can be said given up: only it is read on when its agent goes.
  const unregister = exchange.requestId === undefined ? undefined : parts.givenUp.register(workerId, exchange.requestId, giveUp);
  if (exchange.requestId !== undefined)
    side.recording = parts.kept.record(workerId, exchange.body.reAsk, {
      abandon: () => outgoing.destroy(),
      // Said given up after its end, a kept answer is let go too: until then the id stays known.
      released: () => side.orphaned && unregister?.(),
    });
  const settle = () => {
    clearTimeout(orphanTimer);
    if (!side.orphaned) unregister?.();
  };
  outgoing.on('finish', () => (sent = true));
  response.on('close', () => {
    if (response.writableFinished) return;
    agentGone = true;
    // Gone unsaid (its sidecar killed, say): the upstream has the request, so its answer is read
    // on and kept for the same request sent again, for as long as it is kept at most.
    if (side.recording?.orphan()) {
      side.orphaned = true;
      orphanTimer = setTimeout(giveUp, KEPT_ANSWER_MS);
      orphanTimer.unref();
      return;
    }
    // Given up by the agent, or not to be kept: so is the upstream request.
    giveUp();
  });
  outgoing.on('error', (err: NodeJS.ErrnoException) => {
    if (answered || agentGone) return;
    const reason = `the ${api} upstream ${new URL(exchange.upstream.url).origin} could not be reached (${err.code ?? err.message})`;
    request.log.warn({ worker_id: workerId, api, reason }, 'model upstream failed');
    recordUpstreamFailure(parts, exchange, reason);
    answerUnreachable(exchange, reason);
  });
  outgoing.on('close', () => {
    settle();
    if (answered) return;
    // No answer came: there is nothing to keep for a re-ask.
    side.recording?.drop();
    // Sent and then abandoned by the agent: the upstream has it (and bills it). An upstream
    // that failed is not the agent's doing: nothing is counted.
    if (agentGone && sent) count(abandonedCost(exchange.body), true);
    else count(undefined, false);
  });
  outgoing.on('response', (answer) => {
    answered = true;
    relayUpstreamAnswer(parts, exchange, answer, count, side);
  });
  outgoing.end(exchange.body.bytes);
}
