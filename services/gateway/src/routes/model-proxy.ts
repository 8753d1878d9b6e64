import http from 'node:http';
import https from 'node:https';
import { createIncomingEventPublisher } from '@svc/bus';
import { CodedError, componentSource, MODEL_REQUEST_ID, type IncomingEvent, type ModelApi } from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import { sendApiError, toCodedError } from '../plugins/errors.js';
import type { AppSettings } from '../plugins/settings.js';
import { createBudgetGate } from '../model-proxy/budget-gate.js';
import { createGivenUpRequests } from '../model-proxy/given-up-requests.js';
import { createInFlightLimit } from '../model-proxy/in-flight.js';
import { createKeptAnswers } from '../model-proxy/kept-answers.js';
import { proxyModelRequest, type ModelProxyParts } from '../model-proxy/proxy-request.js';
import type { ModelUpstream } from '../model-proxy/upstream-exchange.js';
import { createUsageRecorder } from '../model-proxy/usage-recorder.js';
import { routePlugin } from './route-plugin.js';

/** Each model API's upstream (`SVC_<API>_UPSTREAM_URL`) and the key the control plane adds (`SVC_<API>_API_KEY`). */
function upstreamsOf(settings: AppSettings): Record<ModelApi, ModelUpstream> {
  return {
    anthropic: { url: settings.anthropicUpstreamUrl ?? 'https://api.anthropic.com', apiKey: settings.anthropicApiKey },
    openai: { url: settings.openaiUpstreamUrl ?? 'https://api.openai.com', apiKey: settings.openaiApiKey },
    gemini: { url: settings.geminiUpstreamUrl ?? 'https://generativelanguage.googleapis.com', apiKey: settings.geminiApiKey },
  };
}

/**
 * `/v1/workers/{id}/model/{api}/*`: a worker's model traffic, from its sidecar. Only inference
 * passes (`MODEL_PROXY_ROUTES`, the listed headers); it goes to the API's upstream with the
 * control plane's key, the answer streams back as it comes (as fast as the agent reads it), and is
 * metered (docs/model-proxy.md).
 * A request past the worker's budget, or not inference, is refused in the provider's error
 * shape, and the history says why.
 */
export const modelProxyRoutes = routePlugin('svc-model-proxy-routes', ['svc-settings', 'svc-bus', 'svc-worker-directory', 'svc-model-usage'], async (app) => {
  const publisher = createIncomingEventPublisher(app.bus, componentSource('model-proxy'));
  const record = (workerId: string, requestId: string | undefined, event: IncomingEvent) => {
    return publisher
      .publish(workerId, event, { requestId })
      .catch((err: unknown) => app.log.warn({ err, worker_id: workerId }, 'could not record a model proxy event'));
  };
  const usage = createUsageRecorder({
    ledger: app.modelUsage,
    record: (workerId, event) => record(workerId, undefined, event),
    onError: (err, workerId) => app.log.error({ err, worker_id: workerId }, 'could not meter a model response'),
  });
  const parts: ModelProxyParts = {
    workers: app.workers,
    upstreams: upstreamsOf(app.settings),
    agents: { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) },
    usage,
    gate: createBudgetGate({ ledger: app.modelUsage, written: (workerId) => usage.written(workerId) }),
    inFlight: createInFlightLimit(),
    record,
    kept: createKeptAnswers(),
    givenUp: createGivenUpRequests(),
  };
  app.addHook('onClose', async () => {
    // Answers read on for a re-ask are let go first (their upstreams stopped, their usage
    // counted in the stream events of this turn of the loop), then the usage still gathered is
    // written (and announced) before the publisher goes.
    parts.kept.close();
    await new Promise((resolve) => setImmediate(resolve));
    await usage.close();
    publisher.close();
    parts.agents.http.destroy();
    parts.agents.https.destroy();
  });

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

  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/v1/workers/:id/model/:api/*',
    config: { auth: 'worker' },
    schema: { hide: true },
    handler: (request, reply) => proxyModelRequest(parts, request, reply),
  });

  // The sidecar says its agent gave a request up (an interrupt): it is let go, its answer not kept.
  app.route({
    method: 'DELETE',
    url: '/v1/workers/:id/model-requests/:request_id',
    config: { auth: 'worker' },
    schema: { hide: true },
    handler: async (request, reply) => {
      const { id: workerId, request_id: requestId } = request.params as { id: string; request_id: string };
      await authorizeWorker(request, parts.workers, workerId);
      if (!MODEL_REQUEST_ID.test(requestId)) throw new CodedError('invalid_request', `a model request id is 8 to 64 of A-Z a-z 0-9 _ -`);
      // Not in flight here (ended, or on another replica): nothing to let go, and nothing wrong.
      parts.givenUp.giveUp(workerId, requestId);
      return reply.code(204).send();
    },
  });
});
