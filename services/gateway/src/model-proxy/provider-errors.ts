import type { ModelApi } from '@svc/protocol';
import type { PolicyRefusal } from './request-policy.js';

/** Seconds an agent is told to wait when its budget's rest is held by requests in flight, or it has too many in flight. */
export const HELD_RETRY_AFTER_S = 1;

/** Why the proxy answers an error itself: the budget, a held budget, the request policy, or an upstream it cannot use. */
export type ErrorKind = 'budget' | 'held' | PolicyRefusal['kind'] | 'unreachable';

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
  // Google's status names (google.rpc.Code); Gemini CLI retries 429 and 5xx, not 403.
  gemini: {
    budget: { status: 429, type: 'RESOURCE_EXHAUSTED' },
    held: { status: 429, type: 'RESOURCE_EXHAUSTED' },
    not_allowed: { status: 403, type: 'PERMISSION_DENIED' },
    invalid: { status: 400, type: 'INVALID_ARGUMENT' },
    too_large: { status: 413, type: 'INVALID_ARGUMENT' },
    busy: { status: 429, type: 'RESOURCE_EXHAUSTED' },
    unreachable: { status: 502, type: 'UNAVAILABLE' },
  },
};

/**
 * An error in the provider's own shape, so the agent's client reports it as the provider's
 * (Anthropic: `{type:"error", error:{type, message}}`; OpenAI: `{error:{message, type, code}}`;
 * Gemini: `{error:{code, message, status}}`).
 */
export function providerError(api: ModelApi, kind: ErrorKind, message: string): { status: number; body: string } {
  const { status, type, code } = PROVIDER_ERRORS[api][kind];
  if (api === 'anthropic') return { status, body: JSON.stringify({ type: 'error', error: { type, message } }) };
  if (api === 'gemini') return { status, body: JSON.stringify({ error: { code: status, message, status: type } }) };
  return { status, body: JSON.stringify({ error: { message, type, param: null, code: code ?? null } }) };
}
