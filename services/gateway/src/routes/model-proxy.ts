import { type WorkerDirectory } from '@svc/auth';
import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { createIncomingEventPublisher, type ModelUsageLedger, type NatsConnection } from '@svc/bus';
import { budgetReached, CodedError, MODEL_APIS, MODEL_PROXY_SUBTYPES, MODEL_PROXY_UNFORWARDED_HEADERS, type IncomingEvent, type ModelApi } from '@svc/protocol';
import { counter } from '@svc/service-kit';
import { authorizeWorker } from '../auth/authorization.js';
import { sendApiError, toCodedError } from '../plugins/errors.js';
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

/** The most of a request body read to learn its `model` (the body itself streams on untouched). */
const MODEL_SNIFF_BYTES = 64 * 1024;

/** Hop-by-hop headers (RFC 9110 §7.6.1) and the credentials the agent was given: never forwarded. */
const DROPPED_REQUEST_HEADERS = new Set([...MODEL_PROXY_UNFORWARDED_HEADERS, 'x-request-id', 'cookie']);
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
};

/**
 * An error in the provider's own shape, so the agent's client reports it as the provider's
 * (Anthropic: `{type:"error", error:{type, message}}`; OpenAI: `{error:{message, type, code}}`).
 */
function providerError(api: ModelApi, kind: 'budget' | 'unreachable', message: string): { status: number; body: string } {
  if (api === 'anthropic') {
    // 402 billing_error and 502 api_error: the Anthropic clients retry neither 402 nor (for long) a 502.
    return kind === 'budget'
      ? { status: 402, body: JSON.stringify({ type: 'error', error: { type: 'billing_error', message } }) }
      : { status: 502, body: JSON.stringify({ type: 'error', error: { type: 'api_error', message } }) };
  }
  return kind === 'budget'
    ? { status: 429, body: JSON.stringify({ error: { message, type: 'insufficient_quota', param: null, code: 'insufficient_quota' } }) }
    : { status: 502, body: JSON.stringify({ error: { message, type: 'server_error', param: null, code: 'upstream_unreachable' } }) };
}

function forwardedHeaders(incoming: IncomingHttpHeaders, dropped: ReadonlySet<string>): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(incoming)) if (value !== undefined && !dropped.has(name)) out[name] = value;
  return out;
}

const modelBytes = counter({
  name: 'svc_model_proxy_bytes_total',
  help: "Bytes through the model proxy, by worker, API, and direction (sent: the agent's requests; received: the model's answers).",
  labelNames: ['worker_id', 'api', 'direction'],
});

/**
 * `/v1/workers/{id}/model/{api}/*`: a worker's model traffic, from its sidecar, forwarded to the
 * API's upstream with the control plane's key, streamed both ways (nothing is buffered), and
 * metered from the responses (docs/model-proxy.md). Past the worker's budget a request is refused
 * in the provider's error shape, and the history says why.
 */
export const modelProxyRoutes: FastifyPluginAsync<ModelProxyRoutesOptions> = async (app, { nc, workers, ledger, upstreams }) => {
  const publisher = createIncomingEventPublisher(nc);
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  // The body streams on to the upstream as it arrives: no parser reads it here.
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
  app.addHook('onClose', async () => {
    // The usage still gathered is written (and announced) before the publisher goes.
    await usage.close();
    publisher.close();
    agents.http.destroy();
    agents.https.destroy();
  });

  async function refuse(request: FastifyRequest, reply: FastifyReply, workerId: string, api: ModelApi, reason: string): Promise<void> {
    const totals = await ledger.update(workerId, (current) => ({ ...current, refused: current.refused + 1, budget_exhausted: true }));
    await record(workerId, request.id, {
      type: 'system',
      uid: `model-proxy:refused:${totals.refused}`,
      ts: new Date().toISOString(),
      data: { level: 'error', subtype: MODEL_PROXY_SUBTYPES.budgetExhausted, message: `model request refused: ${reason}`, details: { api, usage: totals } },
    });
    const answer = providerError(api, 'budget', `svc: ${reason}; this worker may make no more model requests`);
    return reply.code(answer.status).type('application/json').send(answer.body);
  }

  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/v1/workers/:id/model/:api/*',
    config: { auth: 'worker' },
    schema: { hide: true },
    async handler(request, reply) {
      const { id: workerId, api: apiName, '*': rest } = request.params as { id: string; api: string; '*': string };
      const worker = await authorizeWorker(request, workers, workerId);
      if (!(MODEL_APIS as readonly string[]).includes(apiName))
        throw new CodedError('not_found', `${apiName} is not a model API svc proxies (${MODEL_APIS.join(', ')})`);
      const api = apiName as ModelApi;
      // From this worker's side, an API its template does not name does not exist.
      if (!worker.model?.apis.includes(api)) throw new CodedError('not_found', `worker ${workerId}'s template does not use the ${api} model API`);
      const upstream = upstreams[api];
      if (!upstream.apiKey)
        throw new CodedError('unavailable', `the control plane holds no key for the ${api} model API (set SVC_${api.toUpperCase()}_API_KEY on the gateway)`);

      // Only a worker with a budget waits for its totals: this replica's last write of them, then
      // a read of the shared bucket (another replica may have served its last request).
      const budget = worker.model.budget;
      if (budget) await usage.written(workerId);
      const exhausted = budget ? budgetReached(await ledger.get(workerId), budget) : undefined;
      if (exhausted) return refuse(request, reply, workerId, api, exhausted);

      const base = new URL(upstream.url);
      const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
      const transport = base.protocol === 'https:' ? https : http;
      reply.hijack();
      const response = reply.raw;

      let requestedModel: string | undefined;
      let sniffed = '';
      request.raw.on('data', (chunk: Buffer) => {
        modelBytes.inc({ worker_id: workerId, api, direction: 'sent' }, chunk.length);
        if (sniffed.length < MODEL_SNIFF_BYTES) sniffed += chunk.toString('utf8', 0, Math.min(chunk.length, MODEL_SNIFF_BYTES - sniffed.length));
      });
      request.raw.on('end', () => (requestedModel = /"model"\s*:\s*"([^"]{1,200})"/.exec(sniffed)?.[1]));

      const outgoing = transport.request({
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        method: request.method,
        path: `${base.pathname.replace(/\/+$/, '')}/${rest}${query}`,
        agent: base.protocol === 'https:' ? agents.https : agents.http,
        headers: { ...forwardedHeaders(request.headers, DROPPED_REQUEST_HEADERS), host: base.host, ...KEY_HEADERS[api](upstream.apiKey) },
      });
      // The agent went away: so does the upstream request.
      response.on('close', () => {
        if (!response.writableFinished) outgoing.destroy();
      });
      outgoing.on('error', (err: NodeJS.ErrnoException) => {
        if (response.headersSent) return void response.destroy();
        const reason = `the ${api} upstream ${base.origin} could not be reached (${err.code ?? err.message})`;
        request.log.warn({ worker_id: workerId, api, reason }, 'model upstream failed');
        void record(workerId, request.id, {
          type: 'system',
          uid: `model-proxy:failed:${request.id}:${Date.now()}`,
          ts: new Date().toISOString(),
          data: { level: 'warn', subtype: MODEL_PROXY_SUBTYPES.upstreamFailed, message: `model request failed: ${reason}`, details: { api } },
        });
        const answer = providerError(api, 'unreachable', `svc: ${reason}`);
        response.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
      });
      outgoing.on('response', (upstreamResponse) => {
        const meter = createUsageMeter(api, upstreamResponse.headers['content-type'], requestedModel);
        response.writeHead(upstreamResponse.statusCode ?? 502, forwardedHeaders(upstreamResponse.headers, DROPPED_RESPONSE_HEADERS));
        // Each chunk goes on as it comes (an SSE stream is not held back); the meter reads a copy.
        upstreamResponse.on('data', (chunk: Buffer) => {
          modelBytes.inc({ worker_id: workerId, api, direction: 'received' }, chunk.length);
          meter.write(chunk);
          response.write(chunk);
        });
        upstreamResponse.on('error', () => response.destroy());
        upstreamResponse.on('end', () => {
          response.end();
          usage.add(workerId, api, meter.end(), budget !== undefined);
        });
      });
      request.raw.pipe(outgoing);
    },
  });
};
