import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { priceOf, type ModelApi, type ModelProxyRoute } from '@svc/protocol';
import { checkRequestBody } from './body-policy.js';
import type { PolicyRefusal } from './request-policy.js';

/**
 * The largest request body the proxy reads (the reasons are in docs/model-proxy.md, "What
 * passes"): a whole 1M-token conversation of text is about 5 MiB of JSON, and Claude Code adds
 * images of up to 5 MiB each (base64) and documents; Anthropic itself takes 32 MiB. A worker's
 * requests in flight (`MAX_REQUESTS_IN_FLIGHT`) bound what it can make a replica hold.
 */
export const MAX_REQUEST_BYTES = 16 * 1024 * 1024;
/** What a request that names no output cap is taken to reserve (Codex names none). */
export const DEFAULT_RESERVED_OUTPUT_TOKENS = 32_000;
/** The largest output cap a reservation takes from a body (a larger one holds no more). */
const MAX_RESERVED_OUTPUT_TOKENS = 1_000_000;
/** Input is estimated at one token per this many bytes of the request body until the answer says. */
const BYTES_PER_ESTIMATED_TOKEN = 4;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** What a model request may cost before its answer says: held against the budget while it runs. */
export interface Reservation {
  tokens: number;
  cost_usd: number;
}

/** A request body read and checked: the bytes to send upstream and what the meter needs of it. */
export interface ModelRequestBody {
  bytes: Buffer;
  model: string | undefined;
  streamed: boolean;
  /** Whether the request costs tokens (inference; counting tokens does not). */
  costsTokens: boolean;
  /** Input tokens estimated from the body's size (the answer's own figures replace it). */
  estimatedInputTokens: number;
  /** The output cap the request names, or the default. */
  outputCap: number;
  reservation: Reservation;
  /**
   * What makes another request the same one asked again (an inference request's): a digest of
   * its route and everything it asks but its wording (kept-answers.ts).
   */
  reAsk: string | undefined;
}

const tooLarge = (limit: number): { refusal: PolicyRefusal } => ({
  refusal: { kind: 'too_large', reason: `the request body is larger than the model proxy reads (${limit} bytes)` },
});

/**
 * Reads a request body, refusing one past `MAX_REQUEST_BYTES` — at once when its declared
 * `content-length` says so, else as soon as it gets there (the rest is not read) — or one cut short.
 */
export async function readRequestBody(
  stream: Readable,
  declaredLength: string | undefined,
  limit = MAX_REQUEST_BYTES,
): Promise<Buffer | { refusal: PolicyRefusal }> {
  if (declaredLength !== undefined && Number(declaredLength) > limit) return tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > limit) return tooLarge(limit);
      chunks.push(chunk);
    }
  } catch {
    return { refusal: { kind: 'invalid', reason: 'the request body was cut short' } };
  }
  return Buffer.concat(chunks);
}

/** What a request says besides what it asks: the system prompt (Anthropic's `system`, the Responses API's `instructions`, Gemini's `systemInstruction`), and metadata. */
const WORDING_FIELDS = new Set(['system', 'instructions', 'systemInstruction', 'metadata', 'tools']);

/** The names of a request's tools, in order (Gemini's are in `functionDeclarations`). */
function toolNamesOf(body: Json): unknown[] {
  const tools = Array.isArray(body['tools']) ? body['tools'] : [];
  return tools.flatMap((tool: unknown) => {
    if (!isObject(tool)) return [];
    if (Array.isArray(tool['functionDeclarations']))
      return tool['functionDeclarations'].map((declaration: unknown) => (isObject(declaration) ? declaration['name'] : null));
    return [tool['name'] ?? (isObject(tool['function']) ? tool['function']['name'] : null) ?? tool['type'] ?? null];
  });
}

/**
 * A request is asked again when the same route is asked the same — the same model, conversation,
 * settings — with the same tools by name. The system prompt, metadata and the tools' descriptions
 * are left out: an agent started again may word them anew (Claude Code 2.1.197 names its model
 * anew on `--resume`), and they do not change what the conversation asks.
 */
function reAskDigest(api: ModelApi, routePath: string, body: Json): string {
  const asked = Object.fromEntries(Object.entries(body).filter(([field]) => !WORDING_FIELDS.has(field)));
  return createHash('sha256')
    .update(JSON.stringify([api, routePath, asked, toolNamesOf(body)]))
    .digest('base64url');
}

const positiveInteger = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.min(Math.floor(value), MAX_RESERVED_OUTPUT_TOKENS) : undefined;

/** The output cap a request names: Anthropic's `max_tokens`, the Responses API's `max_output_tokens`, Chat Completions' either, Gemini's `generationConfig.maxOutputTokens`. */
function outputCapOf(api: ModelApi, body: Json): number | undefined {
  if (api === 'anthropic') return positiveInteger(body['max_tokens']);
  if (api === 'gemini') return isObject(body['generationConfig']) ? positiveInteger(body['generationConfig']['maxOutputTokens']) : undefined;
  return positiveInteger(body['max_output_tokens']) ?? positiveInteger(body['max_completion_tokens']) ?? positiveInteger(body['max_tokens']);
}

/**
 * Checks a model request's body (a JSON object, against its route's allow-lists: body-policy.ts)
 * and prepares what goes upstream: the body as checked, serialised again — never the agent's
 * bytes, whose duplicate keys or odd spellings the upstream might read otherwise than the check
 * did — with the policy's rewrites (`store: false`, `include_usage`, no `web_search` tool).
 */
export function prepareRequestBody(
  api: ModelApi,
  route: ModelProxyRoute,
  raw: Buffer,
  /** The model the route's path names (Gemini's `models/{model}:…`), which the body does not. */
  pathModel?: string,
): ModelRequestBody | { refusal: PolicyRefusal } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    return { refusal: { kind: 'invalid', reason: 'the request body is not JSON' } };
  }
  if (!isObject(parsed)) return { refusal: { kind: 'invalid', reason: 'the request body is not a JSON object' } };
  const checked = checkRequestBody(api, route, parsed);
  if ('refusal' in checked) return checked;
  const forwarded = checked.body;
  const bytes = Buffer.from(JSON.stringify(forwarded));
  const model = pathModel ?? (typeof forwarded['model'] === 'string' ? forwarded['model'].slice(0, 200) : undefined);
  // Gemini streams by its method, the others by a flag.
  const streamed = forwarded['stream'] === true || route.path.endsWith(':streamGenerateContent');
  const estimatedInputTokens = Math.ceil(bytes.length / BYTES_PER_ESTIMATED_TOKEN);
  const outputCap = outputCapOf(api, forwarded) ?? DEFAULT_RESERVED_OUTPUT_TOKENS;
  // Counting tokens costs none: such a request holds nothing.
  const costsTokens = route.kind === 'inference';
  const price = priceOf(api, model);
  return {
    bytes,
    model,
    streamed,
    costsTokens,
    estimatedInputTokens,
    outputCap,
    reservation: costsTokens
      ? { tokens: estimatedInputTokens + outputCap, cost_usd: (estimatedInputTokens * price.input + outputCap * price.output) / 1_000_000 }
      : { tokens: 0, cost_usd: 0 },
    reAsk: costsTokens ? reAskDigest(api, route.path, { ...forwarded, ...(pathModel === undefined ? {} : { model: pathModel }) }) : undefined,
  };
}
