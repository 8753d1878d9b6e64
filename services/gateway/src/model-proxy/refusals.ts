import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ModelApi } from '@svc/protocol';
import type { Refused } from './budget-gate.js';
import { HELD_RETRY_AFTER_S, providerError } from './provider-errors.js';
import { budgetRefusedEvent, requestRefusedEvent, type RecordEvent } from './proxy-events.js';
import type { ModelRequestLine, PolicyRefusal } from './request-policy.js';

/** What a refusal answers and records: the agent's request, its worker and model API. */
export interface RefusedRequest {
  request: FastifyRequest;
  reply: FastifyReply;
  workerId: string;
  api: ModelApi;
}

/** A request that is not inference, or cannot be read: nothing goes upstream. */
export async function refuseRequest(record: RecordEvent, refused: RefusedRequest, line: ModelRequestLine, refusal: PolicyRefusal): Promise<FastifyReply> {
  const { request, reply, workerId, api } = refused;
  request.log.warn({ worker_id: workerId, api, method: line.method, reason: refusal.reason }, 'model request refused');
  await record(workerId, request.id, requestRefusedEvent(api, line, refusal));
  const answer = providerError(api, refusal.kind, `svc: ${refusal.reason}`);
  if (refusal.kind === 'busy') reply.header('retry-after', String(HELD_RETRY_AFTER_S));
  return reply.code(answer.status).type('application/json').send(answer.body);
}

/** A request the budget does not let through (used up, or its rest held by requests in flight). */
export async function refuseForBudget(record: RecordEvent, refused: RefusedRequest, budget: Refused): Promise<FastifyReply> {
  const { request, reply, workerId, api } = refused;
  await record(workerId, request.id, budgetRefusedEvent(api, budget));
  if (budget.exhausted) {
    const answer = providerError(api, 'budget', `svc: ${budget.reason}; this worker may make no more model requests`);
    return reply.code(answer.status).type('application/json').send(answer.body);
  }
  const answer = providerError(api, 'held', `svc: ${budget.reason}`);
  return reply.code(answer.status).header('retry-after', String(HELD_RETRY_AFTER_S)).type('application/json').send(answer.body);
}
