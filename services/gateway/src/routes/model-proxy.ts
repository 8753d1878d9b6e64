import { randomUUID } from 'node:crypto';
import { type WorkerDirectory } from '@svc/auth';
import http, { type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import zlib from 'node:zlib';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { createIncomingEventPublisher, type ModelUsageLedger, type NatsConnection } from '@svc/bus';
import { CodedError, componentSource, MODEL_APIS, MODEL_PROXY_SUBTYPES, type IncomingEvent, type MeasuredTokens, type ModelApi } from '@svc/protocol';
import { counter } from '@svc/service-kit';
import { authorizeWorker } from '../auth/authorization.js';
import { sendApiError, toCodedError } from '../plugins/errors.js';
import { relayAnswer } from '../model-proxy/answer-relay.js';
import { createBudgetGate, type Refused } from '../model-proxy/budget-gate.js';
import { createInFlightLimit, MAX_REQUESTS_IN_FLIGHT } from '../model-proxy/in-flight.js';
import { prepareRequestBody, readRequestBody, type ModelRequestBody } from '../model-proxy/request-body.js';
import { checkModelRequest, forwardedRequestHeaders, modelRequestLine, type ModelRequestLine, type PolicyRefusal } from '../model-proxy/request-policy.js';
import { createUsageMeter } from '../model-proxy/usage-meter.js';
import { createUsageRecorder } from '../model-proxy/usage-recorder.js';

/** Where the control plane sends one model API's traffic, and the key it adds (never seen by a sandbox). */
export interface ModelUpstream {
  url: string;
  apiKey: string | undefined;
}

export interface ModelProxyRoutesOptions {
  nc: NatsConnection;
  workers: WorkerDirectory;
  ledger: ModelUsageLedger;
  upstreams: Readonly<Record<ModelApi, ModelUpstream>>;
}

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
/** Seconds an agent is told to wait when its budget's rest is held by requests in flight, or it has too many in flight. */
const HELD_RETRY_AFTER_S = 1;

/** How each API takes its key. */
const KEY_HEADERS: Record<ModelApi, (key: string) => OutgoingHttpHeaders> = {
  anthropic: (key) => ({ 'x-api-key': key }),
  openai: (key) => ({ authorization: `Bearer ${key}` }),
};

type ErrorKind = 'budget' | 'held' | PolicyRefusal['kind'] | 'unreachable';

/** Each refusal's status and type, in each provider's vocabulary. */
const PROVIDER_ERRORS: Record<ModelApi, Record<ErrorKind, { status: number; type: string; code?: string }>> = {
  // 402 billing_error: the Anthropic clients do not retry it; 429 they retry after `retry-after`.
  anthropic: {
    budget: { status: 402, type: 'billing_error' },
    held: { status: 429, type: 'rate_limit_error' },
    not_allowed: { status: 403, type: 'permission_error' },
    invalid: { status: 400, type: 'invalid_request_error' },
    too_large: { status: 413, type: 'request_too_large' },
    busy: { status: 429, type: 'rate_limit_error' },
    unreachable: { status: 502, type: 'api_error' },
  },
  // insufficient_quota is final for Codex; rate_limit_exceeded it retries.
  openai: {
    budget: { status: 429, type: 'insufficient_quota', code: 'insufficient_quota' },
    held: { status: 429, type: 'requests', code: 'rate_limit_exceeded' },
    not_allowed: { status: 403, type: 'invalid_request_error', code: 'not_allowed_by_svc' },
    invalid: { status: 400, type: 'invalid_request_error', code: 'invalid_request' },
    too_large: { status: 413, type: 'invalid_request_error', code: 'request_too_large' },
    busy: { status: 429, type: 'requests', code: 'rate_limit_exceeded' },
    unreachable: { status: 502, type: 'server_error', code: 'upstream_unreachable' },
  },
};

/**
 * An error in the provider's own shape, so the agent's client reports it as the provider's
 * (Anthropic: `{type:"error", error:{type, message}}`; OpenAI: `{error:{message, type, code}}`).
 */
function providerError(api: ModelApi, kind: ErrorKind, message: string): { status: number; body: string } {
  const { status, type, code } = PROVIDER_ERRORS[api][kind];
  if (api === 'anthropic') return { status, body: JSON.stringify({ type: 'error', error: { type, message } }) };
  return { status, body: JSON.stringify({ error: { message, type, param: null, code: code ?? null } }) };
}

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

const modelBytes = counter({
  name: 'svc_model_proxy_bytes_total',
  help: "Bytes through the model proxy, by worker, API, and direction (sent: the agent's requests; received: the model's answers).",
  labelNames: ['worker_id', 'api', 'direction'],
});

/**
 * `/v1/workers/{id}/model/{api}/*`: a worker's model traffic, from its sidecar. Only inference
 * passes (`MODEL_PROXY_ROUTES`, the listed headers); it goes to the API's upstream with the
 * control plane's key, the answer streams back as it comes (as fast as the agent reads it), and is
 * metered (docs/model-proxy.md).
 * A request past the worker's budget, or not inference, is refused in the provider's error
 * shape, and the history says why.
 */
export const modelProxyRoutes: FastifyPluginAsync<ModelProxyRoutesOptions> = async (app, { nc, workers, ledger, upstreams }) => {
  const publisher = createIncomingEventPublisher(nc, componentSource('model-proxy'));
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  // The handler reads the body itself (it checks and may rewrite it): no parser reads it here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));
  // The proxy answers 401 for any token that is not this worker's (an agent's client takes 401
  // as a bad key and stops), where other sidecar routes say 403.
  app.setErrorHandler((error: Error, request, reply) => {
    const coded = toCodedError(error);
    if (coded.status >= 500) request.log.error({ err: error }, 'model proxy request failed');
    sendApiError(reply, coded.code === 'forbidden' ? new CodedError('unauthorized', "this token is not valid for this worker's model proxy") : coded);
  });

  const record = (workerId: string, requestId: string | undefined, event: IncomingEvent) => {
    return publisher
      .publish(workerId, event, { requestId })
      .catch((err: unknown) => app.log.warn({ err, worker_id: workerId }, 'could not record a model proxy event'));
  };
  const usage = createUsageRecorder({
    ledger,
    record: (workerId, event) => record(workerId, undefined, event),
    onError: (err, workerId) => app.log.error({ err, worker_id: workerId }, 'could not meter a model response'),
  });
  const gate = createBudgetGate({ ledger, written: (workerId) => usage.written(workerId) });
  const inFlight = createInFlightLimit();
  app.addHook('onClose', async () => {
    // The usage still gathered is written (and announced) before the publisher goes.
    await usage.close();
    publisher.close();
    agents.http.destroy();
    agents.https.destroy();
  });

  /** A request that is not inference, or cannot be read: nothing goes upstream. */
  async function refuseRequest(
    request: FastifyRequest,
    reply: FastifyReply,
    workerId: string,
    api: ModelApi,
    line: ModelRequestLine,
    refusal: PolicyRefusal,
  ): Promise<void> {
    request.log.warn({ worker_id: workerId, api, method: line.method, reason: refusal.reason }, 'model request refused');
    await record(workerId, request.id, {
      type: 'system',
      uid: `model-proxy:refused-request:${randomUUID()}`,
      ts: new Date().toISOString(),
      data: {
        level: 'warn',
        subtype: MODEL_PROXY_SUBTYPES.requestRefused,
        message: `model request refused: ${refusal.reason}`,
        details: {
          api,
          method: line.method,
          path: line.path.slice(0, 200),
          reason: refusal.kind,
          ...(refusal.field !== undefined ? { field: refusal.field.slice(0, 200) } : {}),
        },
      },
    });
    const answer = providerError(api, refusal.kind, `svc: ${refusal.reason}`);
    if (refusal.kind === 'busy') reply.header('retry-after', String(HELD_RETRY_AFTER_S));
    return reply.code(answer.status).type('application/json').send(answer.body);
  }

  /** A request the budget does not let through (used up, or its rest held by requests in flight). */
  async function refuseForBudget(request: FastifyRequest, reply: FastifyReply, workerId: string, api: ModelApi, refused: Refused): Promise<void> {
    await record(workerId, request.id, {
      type: 'system',
      // The totals' refusal count is unique per worker: a repeated write is stored once.
      uid: `model-proxy:refused:${refused.usage.refused}`,
      ts: new Date().toISOString(),
      data: refused.exhausted
        ? {
            level: 'error',
            subtype: MODEL_PROXY_SUBTYPES.budgetExhausted,
            message: `model request refused: ${refused.reason}`,
            details: { api, usage: refused.usage },
          }
        : {
            level: 'warn',
            subtype: MODEL_PROXY_SUBTYPES.requestRefused,
            message: `model request refused: ${refused.reason}`,
            details: { api, reason: 'budget_held', usage: refused.usage },
          },
    });
    if (refused.exhausted) {
      const answer = providerError(api, 'budget', `svc: ${refused.reason}; this worker may make no more model requests`);
      return reply.code(answer.status).type('application/json').send(answer.body);
    }
    const answer = providerError(api, 'held', `svc: ${refused.reason}`);
    return reply.code(answer.status).header('retry-after', String(HELD_RETRY_AFTER_S)).type('application/json').send(answer.body);
  }

  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/v1/workers/:id/model/:api/*',
    config: { auth: 'worker' },
    schema: { hide: true },
    async handler(request, reply) {
      const { id: workerId, api: apiName } = request.params as { id: string; api: string };
      const worker = await authorizeWorker(request, workers, workerId);
      if (!(MODEL_APIS as readonly string[]).includes(apiName))
        throw new CodedError('not_found', `${apiName} is not a model API svc proxies (${MODEL_APIS.join(', ')})`);
      const api = apiName as ModelApi;
      // From this worker's side, an API its template does not name does not exist.
      if (!worker.model?.apis.includes(api)) throw new CodedError('not_found', `worker ${workerId}'s template does not use the ${api} model API`);
      const { url: upstreamUrl, apiKey } = upstreams[api];
      if (!apiKey)
        throw new CodedError('unavailable', `the control plane holds no key for the ${api} model API (set SVC_${api.toUpperCase()}_API_KEY on the gateway)`);

      // Inference and nothing else: the method, path, query and headers first, then the body.
      const line = modelRequestLine(request.method, request.raw.url ?? request.url);
      const checked = checkModelRequest(api, line);
      if ('refusal' in checked) return refuseRequest(request, reply, workerId, api, line, checked.refusal);
      const headers = forwardedRequestHeaders(api, request.headers);
      if ('refusal' in headers) return refuseRequest(request, reply, workerId, api, line, headers.refusal);
      // A connection check needs nothing of the upstream.
      if (checked.route.kind === 'probe') return reply.code(200).send();
      // A place among the worker's requests in flight, taken before its body is read and held
      // until its answer has gone: what one worker can make this replica buffer is bounded.
      const leave = inFlight.acquire(workerId);
      if (!leave)
        return refuseRequest(request, reply, workerId, api, line, {
          kind: 'busy',
          reason: `the worker has ${MAX_REQUESTS_IN_FLIGHT} model requests in flight, as many as it may; retry when one ends`,
        });
      if (reply.raw.closed) leave();
      else reply.raw.once('close', leave);
      const raw = await readRequestBody(request.raw, request.headers['content-length']);
      if (!Buffer.isBuffer(raw)) return refuseRequest(request, reply, workerId, api, line, raw.refusal);
      const body = prepareRequestBody(api, checked.route, raw);
      if ('refusal' in body) return refuseRequest(request, reply, workerId, api, line, body.refusal);

      // A budgeted worker's request holds what it may cost until it is metered.
      const budget = worker.model.budget;
      let release = () => {};
      if (budget) {
        const admission = await gate.admit(workerId, budget, body.reservation);
        if (!admission.admitted) return refuseForBudget(request, reply, workerId, api, admission);
        release = admission.release;
      }

      reply.hijack();
      // The agent left while its request waited: nothing goes upstream.
      if (reply.raw.destroyed) return release();
      modelBytes.inc({ worker_id: workerId, api, direction: 'sent' }, body.bytes.length);
      const upstream = { url: upstreamUrl, apiKey };
      try {
        forward({ request, response: reply.raw, workerId, api, upstream, line, headers: headers.headers, body, budgeted: budget !== undefined, release });
      } catch (err) {
        // Nothing went upstream (the request could not even be made): the reservation goes now.
        release();
        request.log.error({ err, worker_id: workerId, api }, 'model request could not be forwarded');
        if (reply.raw.headersSent) return void reply.raw.destroy();
        const answer = providerError(api, 'unreachable', `svc: the ${api} model request could not be forwarded (the gateway's upstream setting may be wrong)`);
        reply.raw.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
      }
    },
  });

  /**
   * Sends the checked request upstream and streams the answer back, metering it. Its usage is
   * counted exactly once, however it ends (answered, cut short by either side, never answered),
   * and the reservation is released after that count has landed.
   */
  function forward(options: {
    request: FastifyRequest;
    response: http.ServerResponse;
    workerId: string;
    api: ModelApi;
    upstream: { url: string; apiKey: string };
    line: ModelRequestLine;
    headers: OutgoingHttpHeaders;
    body: ModelRequestBody;
    budgeted: boolean;
    release(): void;
  }): void {
    const { request, response, workerId, api, upstream, line, body } = options;
    const base = new URL(upstream.url);
    const transport = base.protocol === 'https:' ? https : http;
    let counted = false;
    const count = (tokens: MeasuredTokens | undefined, forwarded: boolean) => {
      if (counted) return;
      counted = true;
      if (!forwarded) return options.release();
      // Released however the write goes, even if adding throws.
      void Promise.resolve()
        .then(() => usage.add(workerId, api, tokens, options.budgeted))
        .finally(options.release);
    };
    // What an answer the agent abandoned before it began may have cost: its input, and for a
    // non-streamed request its whole output (generated before the answer is sent).
    const abandoned = (): MeasuredTokens | undefined =>
      body.costsTokens
        ? {
            model: body.model,
            input_tokens: body.estimatedInputTokens,
            output_tokens: body.streamed ? 0 : body.outputCap,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
          }
        : undefined;

    const outgoing = transport.request({
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port,
      method: line.method,
      path: `${base.pathname.replace(/\/+$/, '')}${line.path}${line.query ? `?${line.query}` : ''}`,
      agent: base.protocol === 'https:' ? agents.https : agents.http,
      headers: {
        ...options.headers,
        host: base.host,
        // A compressed answer would hide its usage from a meter that reads text.
        'accept-encoding': 'identity',
        'content-length': body.bytes.length,
        ...KEY_HEADERS[api](upstream.apiKey),
      },
    });
    let sent = false;
    let answered = false;
    let agentGone = false;
    outgoing.on('finish', () => (sent = true));
    // The agent went away: so does the upstream request.
    response.on('close', () => {
      if (response.writableFinished) return;
      agentGone = true;
      outgoing.destroy();
    });
    outgoing.on('error', (err: NodeJS.ErrnoException) => {
      if (answered || agentGone) return;
      const reason = `the ${api} upstream ${base.origin} could not be reached (${err.code ?? err.message})`;
      request.log.warn({ worker_id: workerId, api, reason }, 'model upstream failed');
      void record(workerId, request.id, {
        type: 'system',
        uid: `model-proxy:failed:${randomUUID()}`,
        ts: new Date().toISOString(),
        data: { level: 'warn', subtype: MODEL_PROXY_SUBTYPES.upstreamFailed, message: `model request failed: ${reason}`, details: { api } },
      });
      const answer = providerError(api, 'unreachable', `svc: ${reason}`);
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
    outgoing.on('close', () => {
      if (answered) return;
      // Sent and then abandoned by the agent: the upstream has it (and bills it). An upstream
      // that failed is not the agent's doing: nothing is counted.
      if (agentGone && sent) count(abandoned(), true);
      else count(undefined, false);
    });
    outgoing.on('response', (answer) => {
      answered = true;
      const status = answer.statusCode ?? 502;
      const decoded = decodedBody(answer);
      if (!decoded) {
        const reason = `the ${api} upstream answered in content-encoding ${String(answer.headers['content-encoding'])}, which the model proxy cannot meter`;
        void record(workerId, request.id, {
          type: 'system',
          uid: `model-proxy:failed:${randomUUID()}`,
          ts: new Date().toISOString(),
          data: { level: 'warn', subtype: MODEL_PROXY_SUBTYPES.upstreamFailed, message: `model request failed: ${reason}`, details: { api } },
        });
        answer.destroy();
        // Its cost is unknown: it is counted at what it could have cost.
        const unknown = abandoned();
        count(unknown && { ...unknown, output_tokens: body.outputCap }, true);
        const refusal = providerError(api, 'unreachable', `svc: ${reason}`);
        return void response.writeHead(refusal.status, { 'content-type': 'application/json' }).end(refusal.body);
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
      response.writeHead(status, passedHeaders);
      let ended = false;
      relayAnswer(decoded, response, (chunk) => {
        modelBytes.inc({ worker_id: workerId, api, direction: 'received' }, chunk.length);
        meter.write(chunk);
      });
      decoded.on('error', () => response.destroy());
      decoded.on('end', () => {
        ended = true;
        response.end();
        count(meter.end(), true);
      });
      // Closed without its end: the answer was cut short (by the agent or the upstream), and is
      // metered from what passed. A token count cut short costs nothing still.
      decoded.on('close', () => {
        if (ended) return;
        response.destroy();
        count(meter.end(), true);
      });
    });
    outgoing.end(body.bytes);
  }
};
