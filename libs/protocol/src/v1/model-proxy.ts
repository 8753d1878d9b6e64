import Type, { type Static } from 'typebox';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/**
 * The model proxy (docs/model-proxy.md): an agent's model traffic goes to a loopback address
 * served by its sidecar, which forwards it over its one channel to the gateway; the gateway adds
 * the real key (held by the control plane only), forwards it upstream and meters the tokens.
 */

/** The model APIs svc can proxy, by the name a template gives them. */
export const MODEL_APIS = ['anthropic', 'openai'] as const;
export type ModelApi = (typeof MODEL_APIS)[number];
export const ModelApiSchema = Type.Enum(MODEL_APIS, { description: 'A model API the control plane holds a key for.' });

/**
 * The base URL path the agent is given for each API, on the sidecar's loopback listener. The
 * part after the API's name is passed upstream as it is: Claude Code appends `/v1/messages` to
 * `ANTHROPIC_BASE_URL`; OpenAI clients append `/responses` to a base that ends in `/v1`.
 */
export const SANDBOX_MODEL_BASE_PATHS: Readonly<Record<ModelApi, string>> = { anthropic: '/anthropic', openai: '/openai/v1' };

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
    refused: Type.Integer({ minimum: 0, description: 'Model requests refused (budget used up).' }),
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
export const MODEL_PRICES: ReadonlyArray<{ api: ModelApi; prefix: string; price: ModelPrice }> = [
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
export const MODEL_PROXY_SUBTYPES = { budgetExhausted: SYSTEM_SUBTYPES.modelBudgetExhausted, upstreamFailed: SYSTEM_SUBTYPES.modelUpstreamFailed } as const;

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
];
