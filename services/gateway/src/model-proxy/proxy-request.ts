import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { WorkerDirectory } from '@svc/auth';
import { CodedError, MODEL_APIS, MODEL_REQUEST_ID, MODEL_REQUEST_ID_HEADER, type ModelAccess, type ModelApi, type WorkerRecord } from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import type { BudgetGate } from './budget-gate.js';
import { MAX_REQUESTS_IN_FLIGHT, type InFlightLimit } from './in-flight.js';
import { providerError } from './provider-errors.js';
import { answerReplayedEvent } from './proxy-events.js';
import { refuseForBudget, refuseRequest, type RefusedRequest } from './refusals.js';
import { prepareRequestBody, readRequestBody, type ModelRequestBody } from './request-body.js';
import { checkModelRequest, forwardedRequestHeaders, modelRequestLine, type ModelRequestLine, type PolicyRefusal } from './request-policy.js';
import { forward, modelBytes, type ExchangeParts, type ModelUpstream } from './upstream-exchange.js';

/** What the proxy's requests share, made once by its route plugin. */
export interface ModelProxyParts extends ExchangeParts {
  workers: WorkerDirectory;
  upstreams: Readonly<Record<ModelApi, ModelUpstream>>;
  gate: BudgetGate;
  inFlight: InFlightLimit;
}

/** A request checked as inference, its body read and checked: what goes upstream. */
interface Inference {
  line: ModelRequestLine;
  headers: OutgoingHttpHeaders;
  body: ModelRequestBody;
}

/** The model API the path names, its upstream and the worker's access: from the worker's side, an API its template does not name does not exist. */
function upstreamOf(
  parts: ModelProxyParts,
  worker: WorkerRecord,
  apiName: string,
): { api: ModelApi; upstream: { url: string; apiKey: string }; model: ModelAccess } {
  if (!(MODEL_APIS as readonly string[]).includes(apiName))
    throw new CodedError('not_found', `${apiName} is not a model API svc proxies (${MODEL_APIS.join(', ')})`);
  const api = apiName as ModelApi;
  if (!worker.model?.apis.includes(api)) throw new CodedError('not_found', `worker ${worker.worker_id}'s template does not use the ${api} model API`);
  const { url, apiKey } = parts.upstreams[api];
  if (!apiKey)
    throw new CodedError('unavailable', `the control plane holds no key for the ${api} model API (set SVC_${api.toUpperCase()}_API_KEY on the gateway)`);
  return { api, upstream: { url, apiKey }, model: worker.model };
}

/**
 * Inference and nothing else: the method, path, query and headers first, then the body; or why
 * not; or `probe`, a connection check, which needs nothing of the upstream.
 */
async function checkInference(
  parts: ModelProxyParts,
  { request, reply, workerId, api }: RefusedRequest,
): Promise<Inference | { line: ModelRequestLine; refusal: PolicyRefusal } | 'probe'> {
  const line = modelRequestLine(request.method, request.raw.url ?? request.url);
  const checked = checkModelRequest(api, line);
  if ('refusal' in checked) return { line, refusal: checked.refusal };
  const headers = forwardedRequestHeaders(api, request.headers);
  if ('refusal' in headers) return { line, refusal: headers.refusal };
  if (checked.route.kind === 'probe') return 'probe';
  // A place among the worker's requests in flight, taken before its body is read and held
  // until its answer has gone: what one worker can make this replica buffer is bounded.
  const leave = parts.inFlight.acquire(workerId);
  if (!leave) {
    const reason = `the worker has ${MAX_REQUESTS_IN_FLIGHT} model requests in flight, as many as it may; retry when one ends`;
    return { line, refusal: { kind: 'busy', reason } };
  }
  if (reply.raw.closed) leave();
  else reply.raw.once('close', leave);
  const raw = await readRequestBody(request.raw, request.headers['content-length']);
  if (!Buffer.isBuffer(raw)) return { line, refusal: raw.refusal };
  const body = prepareRequestBody(api, checked.route, raw, checked.model);
  if ('refusal' in body) return { line, refusal: body.refusal };
  return { line, headers: headers.headers, body };
}

/**
 * One model request of a worker's: checked as inference, admitted by the worker's budget (which
 * it holds what it may cost from until it is metered), then forwarded, the answer streaming back.
 * Refusals are answered in the provider's error shape, and the history says why.
 */
export async function proxyModelRequest(parts: ModelProxyParts, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> {
  const { id: workerId, api: apiName } = request.params as { id: string; api: string };
  const worker = await authorizeWorker(request, parts.workers, workerId);
  const { api, upstream, model } = upstreamOf(parts, worker, apiName);
  const refused: RefusedRequest = { request, reply, workerId, api };
  const inference = await checkInference(parts, refused);
  if (inference === 'probe') return reply.code(200).send();
  if ('refusal' in inference) return refuseRequest(parts.record, refused, inference.line, inference.refusal);
  // Asked again after its agent went away from the answer: the answer kept, not the model again.
  const keptAnswer = reply.raw.destroyed ? undefined : parts.kept.take(workerId, inference.body.reAsk);
  if (keptAnswer) {
    reply.hijack();
    keptAnswer(reply.raw);
    void parts.record(workerId, request.id, answerReplayedEvent(api, inference.line));
    return;
  }

  const budget = model.budget;
  let release = () => {};
  if (budget) {
    const admission = await parts.gate.admit(workerId, budget, inference.body.reservation);
    if (!admission.admitted) return refuseForBudget(parts.record, refused, admission);
    release = admission.release;
  }

  reply.hijack();
  // The agent left while its request waited: nothing goes upstream.
  if (reply.raw.destroyed) return release();
  modelBytes.inc({ worker_id: workerId, api, direction: 'sent' }, inference.body.bytes.length);
  try {
    const requestId = request.headers[MODEL_REQUEST_ID_HEADER];
    forward(parts, {
      request,
      response: reply.raw,
      workerId,
      api,
      upstream,
      ...inference,
      budgeted: budget !== undefined,
      requestId: typeof requestId === 'string' && MODEL_REQUEST_ID.test(requestId) ? requestId : undefined,
      release,
    });
  } catch (err) {
    // Nothing went upstream (the request could not even be made): the reservation goes now.
    release();
    request.log.error({ err, worker_id: workerId, api }, 'model request could not be forwarded');
    if (reply.raw.headersSent) return void reply.raw.destroy();
    const answer = providerError(api, 'unreachable', `svc: the ${api} model request could not be forwarded (the gateway's upstream setting may be wrong)`);
    reply.raw.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  }
}
