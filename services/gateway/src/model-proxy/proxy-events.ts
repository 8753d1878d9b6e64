import { randomUUID } from 'node:crypto';
import { MODEL_PROXY_SUBTYPES, type IncomingEvent, type ModelApi } from '@svc/protocol';
import type { Refused } from './budget-gate.js';
import type { ModelRequestLine, PolicyRefusal } from './request-policy.js';

/** Records an event of the proxy's in the worker's history (a failure is logged, never thrown). */
export type RecordEvent = (workerId: string, requestId: string | undefined, event: IncomingEvent) => Promise<unknown>;

/** A request that is not inference, or could not be read: why, and what it asked for. */
export function requestRefusedEvent(api: ModelApi, line: ModelRequestLine, refusal: PolicyRefusal): IncomingEvent {
  return {
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
  };
}

/** A request the budget did not let through: used up (an error), or its rest held by requests in flight. */
export function budgetRefusedEvent(api: ModelApi, refused: Refused): IncomingEvent {
  return {
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
  };
}

/** The upstream could not be reached, or answered in a way the proxy cannot meter. */
export function upstreamFailedEvent(api: ModelApi, reason: string): IncomingEvent {
  return {
    type: 'system',
    uid: `model-proxy:failed:${randomUUID()}`,
    ts: new Date().toISOString(),
    data: { level: 'warn', subtype: MODEL_PROXY_SUBTYPES.upstreamFailed, message: `model request failed: ${reason}`, details: { api } },
  };
}

/** A request asked again, answered with the answer kept of its first ask (its agent went away from it): the model was not asked twice. */
export function answerReplayedEvent(api: ModelApi, line: ModelRequestLine): IncomingEvent {
  return {
    type: 'system',
    uid: `model-proxy:replayed:${randomUUID()}`,
    ts: new Date().toISOString(),
    data: {
      level: 'info',
      subtype: MODEL_PROXY_SUBTYPES.answerReplayed,
      message: 'model request asked again: answered with the answer kept of its first ask, which the agent went away from; the model was not asked twice',
      details: { api, method: line.method, path: line.path.slice(0, 200) },
    },
  };
}
