import type { MeasuredTokens, ModelApi } from '@svc/protocol';

/** The most of a non-streamed (JSON) response body kept for reading its usage. */
const MAX_JSON_BYTES = 16 * 1024 * 1024;
/** Output that passed without its count is estimated at one token per this many characters. */
const CHARS_PER_ESTIMATED_TOKEN = 3;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);
const length = (value: unknown): number => (typeof value === 'string' ? value.length : 0);

/**
 * Reads the token usage of one model response as it streams past, without holding it back:
 * Server-Sent Events are read line by line (Anthropic's `message_start`/`message_delta`, the
 * Responses API's `response.completed`, a Chat Completions chunk with `usage`, Gemini's
 * `usageMetadata` up to the chunk with a `finishReason`); a JSON body is
 * kept (up to 16 MiB) and read at its end. What the agent reports about itself plays no part.
 * The body it reads is the decoded one (the proxy asks for `identity` and decodes what is not).
 */
export interface UsageMeter {
  /** Every chunk of the (decoded) response body, in order. */
  write(chunk: Buffer): void;
  /**
   * The usage seen (undefined when the response carried none, e.g. an error). A successful
   * answer to a request that costs tokens whose final count never came — cut short (the agent
   * went away, the upstream broke off) or ended without one — is metered from what passed: its
   * input as the upstream said or as estimated from the request, its output at least what the
   * streamed text amounts to (non-streamed: the bytes received).
   */
  end(): MeasuredTokens | undefined;
}

export interface MeteredRequest {
  model: string | undefined;
  /** The request's input, estimated from its size (used when the answer never said). */
  estimatedInputTokens: number;
  /** Whether the request costs tokens (inference; counting tokens does not, and is never estimated). */
  costsTokens: boolean;
}

export function createUsageMeter(api: ModelApi, status: number, contentType: string | undefined, request: MeteredRequest): UsageMeter {
  const streamed = (contentType ?? '').includes('text/event-stream');
  const tokens: MeasuredTokens = { model: request.model, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };
  let seen = false;
  let inputSeen = false;
  // The final count arrived: Anthropic's `message_delta`, the Responses API's last event, a Chat chunk with `usage`.
  let complete = false;
  let generatedChars = 0;
  let pending = '';
  const jsonChunks: Buffer[] = [];
  let jsonBytes = 0;
  const decoder = new TextDecoder();

  function take(object: Json): void {
    const read = READERS[api](object, tokens);
    if (read === 'none') return;
    seen = true;
    inputSeen ||= tokens.input_tokens > 0;
    complete ||= read === 'final';
  }

  function readLine(line: string): void {
    if (!line.startsWith('data:')) return;
    const payload = line.slice(5).trim();
    if (payload === '' || payload === '[DONE]') return;
    const usage = payload.includes('usage');
    // A Gemini chunk carries its text in `candidates`, the others in a `delta`.
    const delta = payload.includes(api === 'gemini' ? 'candidates' : 'delta');
    if (!usage && !delta) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(payload);
    } catch {
      return; // Not JSON: nothing to count.
    }
    if (!isObject(parsed)) return;
    if (delta) generatedChars += DELTA_CHARS[api](parsed);
    if (usage) take(parsed);
  }

  return {
    write(chunk) {
      if (!streamed) {
        jsonBytes += chunk.length;
        if (jsonBytes <= MAX_JSON_BYTES) jsonChunks.push(chunk);
        return;
      }
      const lines = (pending + decoder.decode(chunk, { stream: true })).split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) readLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    },
    end() {
      if (streamed) {
        readLine(pending + decoder.decode());
      } else if (jsonBytes <= MAX_JSON_BYTES) {
        try {
          const parsed: unknown = JSON.parse(Buffer.concat(jsonChunks).toString('utf8'));
          // Gemini's stream without SSE is an array of its chunks.
          for (const item of Array.isArray(parsed) ? parsed : [parsed]) if (isObject(item)) take(item);
        } catch {
          // Not JSON (or cut short): nothing to count.
        }
      }
      if (request.costsTokens && !complete && status >= 200 && status < 300) {
        // The upstream produced (and bills) more than its counts so far say.
        if (!inputSeen) tokens.input_tokens = Math.max(tokens.input_tokens, request.estimatedInputTokens);
        const passed = streamed ? generatedChars : jsonBytes;
        tokens.output_tokens = Math.max(tokens.output_tokens, Math.ceil(passed / CHARS_PER_ESTIMATED_TOKEN));
        return tokens;
      }
      return seen ? tokens : undefined;
    },
  };
}

/** The characters of generated text in one Anthropic stream event (text, tool input, thinking). */
function anthropicDeltaChars(object: Json): number {
  const delta = object['delta'];
  if (object['type'] !== 'content_block_delta' || !isObject(delta)) return 0;
  return length(delta['text']) + length(delta['partial_json']) + length(delta['thinking']);
}

/** The characters of generated text in one OpenAI stream event: a Responses `*.delta`, a Chat chunk's choices. */
function openAIDeltaChars(object: Json): number {
  let chars = length(object['delta']);
  const choices = Array.isArray(object['choices']) ? object['choices'] : [];
  for (const choice of choices) {
    if (!isObject(choice) || !isObject(choice['delta'])) continue;
    const delta = choice['delta'];
    chars += length(delta['content']) + length(delta['refusal']) + length(delta['reasoning_content']);
    for (const call of Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : [])
      if (isObject(call) && isObject(call['function'])) chars += length(call['function']['arguments']);
  }
  return chars;
}

/**
 * Anthropic Messages: `input_tokens` excludes the cache, so the cache's reads and writes are
 * added. `message_start` carries the input and a first output count; `message_delta` the final
 * output count (cumulative), sometimes the input again. A whole (non-streamed) message has both.
 */
function readAnthropic(object: Json, tokens: MeasuredTokens): 'none' | 'partial' | 'final' {
  const started = object['type'] === 'message_start';
  const message = started && isObject(object['message']) ? object['message'] : object;
  if (typeof message['model'] === 'string') tokens.model = message['model'];
  const usage = message['usage'];
  if (!isObject(usage)) return 'none';
  const cacheRead = count(usage['cache_read_input_tokens']);
  const cacheWrite = count(usage['cache_creation_input_tokens']);
  const input = count(usage['input_tokens']) + cacheRead + cacheWrite;
  // Counts are cumulative within a message: the largest seen is the message's.
  tokens.input_tokens = Math.max(tokens.input_tokens, input);
  tokens.cache_read_tokens = Math.max(tokens.cache_read_tokens, cacheRead);
  tokens.cache_write_tokens = Math.max(tokens.cache_write_tokens, cacheWrite);
  tokens.output_tokens = Math.max(tokens.output_tokens, count(usage['output_tokens']));
  return started ? 'partial' : 'final';
}

/**
 * OpenAI: the Responses API's final event (`response.completed`, `.incomplete` or `.failed`)
 * or a whole response; Chat Completions' `usage` (`prompt_tokens`, `completion_tokens`).
 * `input_tokens` includes cached ones here. Each carries the request's whole count.
 */
function readOpenAI(object: Json, tokens: MeasuredTokens): 'none' | 'final' {
  const response = isObject(object['response']) ? object['response'] : object;
  if (typeof response['model'] === 'string') tokens.model = response['model'];
  const usage = response['usage'];
  if (!isObject(usage)) return 'none';
  const inputDetails = isObject(usage['input_tokens_details'])
    ? usage['input_tokens_details']
    : isObject(usage['prompt_tokens_details'])
      ? usage['prompt_tokens_details']
      : {};
  tokens.input_tokens = count(usage['input_tokens'] ?? usage['prompt_tokens']);
  tokens.output_tokens = count(usage['output_tokens'] ?? usage['completion_tokens']);
  tokens.cache_read_tokens = count(inputDetails['cached_tokens']);
  return 'final';
}

/** The characters of generated text in one Gemini chunk: its candidates' text parts and function calls' arguments. */
function geminiDeltaChars(object: Json): number {
  let chars = 0;
  for (const candidate of Array.isArray(object['candidates']) ? object['candidates'] : []) {
    const content = isObject(candidate) && isObject(candidate['content']) ? candidate['content'] : {};
    for (const part of Array.isArray(content['parts']) ? content['parts'] : []) {
      if (!isObject(part)) continue;
      chars += length(part['text']);
      if (isObject(part['functionCall'])) chars += JSON.stringify(part['functionCall']['args'] ?? {}).length;
    }
  }
  return chars;
}

/**
 * Gemini: every chunk's `usageMetadata` holds the counts so far; the one whose candidate has a
 * `finishReason` the whole. `promptTokenCount` includes the cached tokens; thoughts are output
 * (billed as such), and so is a tool-use prompt's count input.
 */
function readGemini(object: Json, tokens: MeasuredTokens): 'none' | 'partial' | 'final' {
  if (typeof object['modelVersion'] === 'string') tokens.model = object['modelVersion'];
  const usage = object['usageMetadata'];
  if (!isObject(usage)) return 'none';
  tokens.input_tokens = Math.max(tokens.input_tokens, count(usage['promptTokenCount']) + count(usage['toolUsePromptTokenCount']));
  tokens.cache_read_tokens = Math.max(tokens.cache_read_tokens, count(usage['cachedContentTokenCount']));
  tokens.output_tokens = Math.max(tokens.output_tokens, count(usage['candidatesTokenCount']) + count(usage['thoughtsTokenCount']));
  const candidates = Array.isArray(object['candidates']) ? object['candidates'] : [];
  return candidates.some((candidate) => isObject(candidate) && typeof candidate['finishReason'] === 'string') ? 'final' : 'partial';
}

const READERS: Record<ModelApi, (object: Json, tokens: MeasuredTokens) => 'none' | 'partial' | 'final'> = {
  anthropic: readAnthropic,
  openai: readOpenAI,
  gemini: readGemini,
};
const DELTA_CHARS: Record<ModelApi, (object: Json) => number> = { anthropic: anthropicDeltaChars, openai: openAIDeltaChars, gemini: geminiDeltaChars };
