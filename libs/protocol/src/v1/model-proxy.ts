import Type, { type Static } from 'typebox';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/**
 * The model proxy (docs/model-proxy.md): an agent's model traffic goes to a loopback address
 * served by its sidecar, which forwards it over its one channel to the gateway; the gateway adds
 * the real key (held by the control plane only), forwards it upstream and meters the tokens.
 */

/** The model APIs svc can proxy, by the name a template gives them. */
export const MODEL_APIS = ['anthropic', 'openai', 'gemini'] as const;
export type ModelApi = (typeof MODEL_APIS)[number];
export const ModelApiSchema = Type.Enum(MODEL_APIS, { description: 'A model API the control plane holds a key for.' });

/**
 * The base URL path the agent is given for each API, on the sidecar's loopback listener. The
 * part after the API's name is passed upstream as it is: Claude Code appends `/v1/messages` to
 * `ANTHROPIC_BASE_URL`; OpenAI clients append `/responses` to a base that ends in `/v1`; Google's
 * Gen AI clients (Gemini CLI's `GOOGLE_GEMINI_BASE_URL`) append `/v1beta/models/<model>:<method>`.
 */
export const SANDBOX_MODEL_BASE_PATHS: Readonly<Record<ModelApi, string>> = { anthropic: '/anthropic', openai: '/openai/v1', gemini: '/gemini' };

/**
 * The key an agent is given in place of the real one: clients refuse to start without some key,
 * and this one is worthless anywhere (the sidecar drops it; the gateway adds the real key).
 */
export const PLACEHOLDER_MODEL_KEY = 'svc-placeholder-not-a-key';

/** The gateway's route of a worker's model traffic: `<this>/<the path the agent asked for>`. */
export function modelProxyPath(workerId: string, api: ModelApi): string {
  return `/v1/workers/${workerId}/model/${api}`;
}

/** A spending cap for a worker's model use, binding in every mode (the proxy refuses past it). */
export const ModelBudgetSchema = Type.Object(
  {
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, description: 'Input (cached included) plus output tokens, summed over every model request.' })),
    max_cost_usd: Type.Optional(Type.Number({ exclusiveMinimum: 0, description: 'Cost in US dollars at the documented price table (docs/model-proxy.md).' })),
  },
  { additionalProperties: false },
);
export type ModelBudget = Static<typeof ModelBudgetSchema>;

/** What a worker may reach through the model proxy, and its budget (kept in its worker record). */
export const ModelAccessSchema = Type.Object(
  {
    apis: Type.Array(ModelApiSchema, { minItems: 1, uniqueItems: true }),
    budget: Type.Optional(ModelBudgetSchema),
  },
  { additionalProperties: false },
);
export type ModelAccess = Static<typeof ModelAccessSchema>;

/** A worker's model use as the proxy measured it (not as the agent reports it). */
export const ModelUsageSchema = Type.Object(
  {
    requests: Type.Integer({ minimum: 0, description: 'Model requests forwarded upstream.' }),
    refused: Type.Integer({ minimum: 0, description: 'Model requests refused for the budget (used up, or held by requests in flight).' }),
    input_tokens: Type.Integer({ minimum: 0, description: 'Input tokens, cache reads and writes included.' }),
    output_tokens: Type.Integer({ minimum: 0 }),
    cache_read_tokens: Type.Integer({ minimum: 0 }),
    cost_usd: Type.Number({ minimum: 0 }),
    /** Set once the budget is used up: further model requests are refused. */
    budget_exhausted: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, title: 'ModelUsage' },
);
export type ModelUsage = Static<typeof ModelUsageSchema>;

export const EMPTY_MODEL_USAGE: ModelUsage = { requests: 0, refused: 0, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cost_usd: 0 };

/** The tokens of one model response. `input_tokens` counts every input token, cached ones too. */
export interface MeasuredTokens {
  model: string | undefined;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
}

/** US dollars per million tokens. */
export interface ModelPrice {
  input: number;
  output: number;
  cache_read: number;
  cache_write: number;
}

/**
 * List prices (USD per million tokens, 2026-11) by model-name prefix, longest prefix first.
 * A model not listed is priced at its API's default (the last entry of each API). The table is
 * docs/model-proxy.md's; a change here is a change there.
 */
const MODEL_PRICES: ReadonlyArray<{ api: ModelApi; prefix: string; price: ModelPrice }> = [
  { api: 'anthropic', prefix: 'claude-opus-4-5', price: { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 } },
  { api: 'anthropic', prefix: 'claude-opus-4', price: { input: 15, output: 75, cache_read: 1.5, cache_write: 18.75 } },
  { api: 'anthropic', prefix: 'claude-haiku-4', price: { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 } },
  { api: 'anthropic', prefix: 'claude-3-5-haiku', price: { input: 0.8, output: 4, cache_read: 0.08, cache_write: 1 } },
  { api: 'anthropic', prefix: 'claude-sonnet-4', price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } },
  { api: 'anthropic', prefix: '', price: { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 } },
  { api: 'openai', prefix: 'gpt-5-nano', price: { input: 0.05, output: 0.4, cache_read: 0.005, cache_write: 0.05 } },
  { api: 'openai', prefix: 'gpt-5-mini', price: { input: 0.25, output: 2, cache_read: 0.025, cache_write: 0.25 } },
  { api: 'openai', prefix: 'gpt-5', price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 1.25 } },
  { api: 'openai', prefix: '', price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 1.25 } },
  { api: 'gemini', prefix: 'gemini-3-pro', price: { input: 2, output: 12, cache_read: 0.2, cache_write: 2 } },
  { api: 'gemini', prefix: 'gemini-2.5-flash-lite', price: { input: 0.1, output: 0.4, cache_read: 0.01, cache_write: 0.1 } },
  { api: 'gemini', prefix: 'gemini-2.5-flash', price: { input: 0.3, output: 2.5, cache_read: 0.03, cache_write: 0.3 } },
  { api: 'gemini', prefix: 'gemini-2.5-pro', price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 1.25 } },
  { api: 'gemini', prefix: '', price: { input: 1.25, output: 10, cache_read: 0.125, cache_write: 1.25 } },
];

/** The price of a model (its API's default when the table does not list it). */
export function priceOf(api: ModelApi, model: string | undefined): ModelPrice {
  const name = model ?? '';
  return MODEL_PRICES.find((entry) => entry.api === api && name.startsWith(entry.prefix))!.price;
}

/** The cost of one response's tokens, in US dollars. */
export function costOf(api: ModelApi, tokens: MeasuredTokens): number {
  const price = priceOf(api, tokens.model);
  const uncached = Math.max(0, tokens.input_tokens - tokens.cache_read_tokens - tokens.cache_write_tokens);
  return (
    (uncached * price.input +
      tokens.cache_read_tokens * price.cache_read +
      tokens.cache_write_tokens * price.cache_write +
      tokens.output_tokens * price.output) /
    1_000_000
  );
}

/** Whether `usage` has reached `budget` (a request past this point is refused). */
export function budgetReached(usage: ModelUsage, budget: ModelBudget | undefined): string | undefined {
  if (!budget) return undefined;
  const tokens = usage.input_tokens + usage.output_tokens;
  if (budget.max_tokens !== undefined && tokens >= budget.max_tokens)
    return `the worker's token budget is used up (${tokens} of max_tokens ${budget.max_tokens})`;
  if (budget.max_cost_usd !== undefined && usage.cost_usd >= budget.max_cost_usd) {
    return `the worker's cost budget is used up ($${usage.cost_usd.toFixed(4)} of max_cost_usd $${budget.max_cost_usd})`;
  }
  return undefined;
}

/** `system` event subtypes the model proxy reports in a worker's history. */
export const MODEL_PROXY_SUBTYPES = {
  answerReplayed: SYSTEM_SUBTYPES.modelAnswerReplayed,
  budgetExhausted: SYSTEM_SUBTYPES.modelBudgetExhausted,
  upstreamFailed: SYSTEM_SUBTYPES.modelUpstreamFailed,
  requestRefused: SYSTEM_SUBTYPES.modelRequestRefused,
} as const;

/**
 * One request the model proxy passes. `path` is relative to the API's upstream base URL (the
 * part the agent appends to the base it was given, `SANDBOX_MODEL_BASE_PATHS`); a `{model}` in it
 * stands for one model name (`MODEL_NAME_IN_PATH`), which is then the request's model; `query`
 * names the query parameters it may carry.
 * - `inference`: forwarded, metered, and held against the budget while it runs;
 * - `count`: forwarded (it costs no tokens), not held against the budget;
 * - `probe`: a connection check, answered by the gateway itself (nothing goes upstream).
 */
export interface ModelProxyRoute {
  method: 'GET' | 'HEAD' | 'POST';
  path: string;
  kind: 'inference' | 'count' | 'probe';
  query: readonly string[];
  /** Query parameters it must carry, once, with exactly this value (the answer's format the meter reads). */
  requiredQuery?: Readonly<Record<string, string>>;
}

/**
 * Everything the model proxy passes, per API: inference and nothing else (docs/model-proxy.md).
 * What the CLIs call, seen from the binaries (2026-11): Claude Code 2.1.197 and 2.1.330 send
 * `POST /v1/messages?beta=true` (2.1.197 also `HEAD /` to warm its connection); Codex 0.169.0,
 * with the `svc` provider at `…/openai/v1`, sends `POST /v1/responses`. Neither lists models
 * when it holds an API key, so no models list is passed.
 */
export const MODEL_PROXY_ROUTES: Readonly<Record<ModelApi, readonly ModelProxyRoute[]>> = {
  anthropic: [
    { method: 'POST', path: '/v1/messages', kind: 'inference', query: ['beta'] },
    { method: 'POST', path: '/v1/messages/count_tokens', kind: 'count', query: ['beta'] },
    { method: 'HEAD', path: '/', kind: 'probe', query: [] },
  ],
  openai: [
    { method: 'POST', path: '/v1/responses', kind: 'inference', query: [] },
    { method: 'POST', path: '/v1/chat/completions', kind: 'inference', query: [] },
  ],
  // Gemini CLI 0.61 (through @google/genai) streams with `?alt=sse`; `countTokens` costs nothing.
  gemini: [
    // A stream without `alt=sse` is one JSON array, read only at its end: SSE alone is metered as it goes.
    { method: 'POST', path: '/v1beta/models/{model}:streamGenerateContent', kind: 'inference', query: ['alt'], requiredQuery: { alt: 'sse' } },
    { method: 'POST', path: '/v1beta/models/{model}:generateContent', kind: 'inference', query: [] },
    { method: 'POST', path: '/v1beta/models/{model}:countTokens', kind: 'count', query: [] },
    { method: 'POST', path: '/v1/models/{model}:streamGenerateContent', kind: 'inference', query: ['alt'], requiredQuery: { alt: 'sse' } },
    { method: 'POST', path: '/v1/models/{model}:generateContent', kind: 'inference', query: [] },
    { method: 'POST', path: '/v1/models/{model}:countTokens', kind: 'count', query: [] },
  ],
};

/** What a `{model}` in a route's path takes: one model name, no `/`, `:` or encoding (`gemini-2.5-pro`). */
export const MODEL_NAME_IN_PATH = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Request headers the model proxy forwards, per API: a name, or a prefix ending in `-`. Any other
 * header is dropped (a client's own metadata the upstream does not need), except those in
 * `MODEL_PROXY_REFUSED_HEADERS`. The proxy sets `host`, `content-length`, the key and
 * `accept-encoding: identity` itself.
 */
export const MODEL_PROXY_FORWARDED_HEADERS: Readonly<Record<ModelApi, readonly string[]>> = {
  anthropic: [
    'accept',
    'content-type',
    'user-agent',
    'anthropic-version',
    'anthropic-beta',
    'anthropic-dangerous-direct-browser-access',
    'x-app',
    'x-claude-code-session-id',
    'x-stainless-',
  ],
  openai: [
    'accept',
    'content-type',
    'user-agent',
    'originator',
    'session-id',
    'thread-id',
    'session_id',
    'conversation_id',
    'x-client-request-id',
    'x-codex-',
    'x-stainless-',
  ],
  gemini: ['accept', 'content-type', 'user-agent', 'x-goog-api-client'],
};

/**
 * Request headers that make the proxy refuse the request: they would move the key's use to
 * another organisation or project than the one the operator chose.
 */
export const MODEL_PROXY_REFUSED_HEADERS: readonly string[] = ['openai-organization', 'openai-project', 'x-goog-user-project'];

/**
 * The `anthropic-beta` features the proxy passes: the ones Claude Code 2.1.197 and 2.1.330 send
 * (read from their requests), and other inference-only ones. A request naming any other beta is
 * refused: some reach past inference (`files-api-*` reads files any holder of the key uploaded,
 * `mcp-client-*` has Anthropic's servers call out, `code-execution-*`, `skills-*` …).
 */
export const ANTHROPIC_BETAS_PASSED: readonly string[] = [
  'claude-code-20250219',
  'interleaved-thinking-2025-05-14',
  'fine-grained-tool-streaming-2025-05-14',
  'token-efficient-tools-2025-02-19',
  'output-128k-2025-02-19',
  'extended-cache-ttl-2025-04-11',
  'context-management-2025-06-27',
  'context-1m-2025-08-07',
  'structured-outputs-2025-11-13',
  'structured-outputs-2025-12-15',
  'tool-search-tool-2025-10-19',
  'advanced-tool-use-2025-11-20',
  'effort-2025-11-24',
  'prompt-caching-scope-2026-01-05',
  'redact-thinking-2026-02-12',
  'mid-conversation-system-2026-04-07',
  'thinking-token-count-2026-05-13',
  'per-turn-control-2026-07-01',
  'mid-conversation-tool-changes-2026-07-01',
  'thinking-display-updates-2026-08-18',
  'mid-conversation-system-clear-at-2026-08-21',
  'token-counting-2024-11-01',
];

/**
 * The header the sidecar's model proxy names each request it forwards with (a random id of
 * `MODEL_REQUEST_ID` letters), so that it can tell the gateway when its agent gave the request up
 * (`DELETE apiPaths.modelRequest`): an answer whose agent went away unsaid is read on and kept
 * for the same request sent again (docs/model-proxy.md, "A re-ask after a crash").
 */
export const MODEL_REQUEST_ID_HEADER = 'svc-model-request-id';
/** The shape of a model request's id (`MODEL_REQUEST_ID_HEADER`). */
export const MODEL_REQUEST_ID = /^[A-Za-z0-9_-]{8,64}$/;

/**
 * Request headers a model proxy never forwards: those that end at one hop (RFC 9110 §7.6.1) and
 * the credentials the agent holds (a placeholder in the sandbox, its worker token at the gateway).
 * The sidecar's proxy and the gateway's both drop them.
 */
export const MODEL_PROXY_UNFORWARDED_HEADERS: readonly string[] = [
  'host',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'authorization',
  'x-api-key',
  'x-goog-api-key',
];
