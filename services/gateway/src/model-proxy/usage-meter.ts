import type { MeasuredTokens, ModelApi } from '@svc/protocol';

/** The most of a non-streamed (JSON) response body kept for reading its usage. */
const MAX_JSON_BYTES = 16 * 1024 * 1024;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0);

/**
 * Reads the token usage of one model response as it streams past, without holding it back:
 * Server-Sent Events are read line by line (Anthropic's `message_start`/`message_delta`, the
 * Responses API's `response.completed`, a Chat Completions chunk with `usage`); a JSON body is
 * kept (up to 16 MiB) and read at its end. What the agent reports about itself plays no part.
 */
export interface UsageMeter {
  /** Every chunk of the response body, in order. */
  write(chunk: Buffer): void;
  /** The usage seen (undefined when the response carried none, e.g. an error). */
  end(): MeasuredTokens | undefined;
}

export function createUsageMeter(api: ModelApi, contentType: string | undefined, requestedModel: string | undefined): UsageMeter {
  const streamed = (contentType ?? '').includes('text/event-stream');
  const tokens: MeasuredTokens = { model: requestedModel, input_tokens: 0, output_tokens: 0, cache_read_tokens: 0, cache_write_tokens: 0 };
  let seen = false;
  let pending = '';
  const jsonChunks: Buffer[] = [];
  let jsonBytes = 0;
  const decoder = new TextDecoder();

  const readUsage = api === 'anthropic' ? readAnthropic : readOpenAI;
  function take(object: Json): void {
    if (readUsage(object, tokens)) seen = true;
  }

  function readLine(line: string): void {
    if (!line.startsWith('data:')) return;
    const payload = line.slice(5).trim();
    if (payload === '' || payload === '[DONE]' || !payload.includes('usage')) return;
    try {
      const parsed: unknown = JSON.parse(payload);
      if (isObject(parsed)) take(parsed);
    } catch {
      // Not JSON: nothing to count.
    }
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
          if (isObject(parsed)) take(parsed);
        } catch {
          // Not JSON: nothing to count.
        }
      }
      return seen ? tokens : undefined;
    },
  };
}

/**
 * Anthropic Messages: `input_tokens` excludes the cache, so the cache's reads and writes are
 * added. `message_start` carries the input and a first output count; `message_delta` the final
 * output count (cumulative), sometimes the input again. A whole (non-streamed) message has both.
 */
function readAnthropic(object: Json, tokens: MeasuredTokens): boolean {
  const message = object['type'] === 'message_start' && isObject(object['message']) ? object['message'] : object;
  if (typeof message['model'] === 'string') tokens.model = message['model'];
  const usage = message['usage'];
  if (!isObject(usage)) return false;
  const cacheRead = count(usage['cache_read_input_tokens']);
  const cacheWrite = count(usage['cache_creation_input_tokens']);
  const input = count(usage['input_tokens']) + cacheRead + cacheWrite;
  // Counts are cumulative within a message: the largest seen is the message's.
  tokens.input_tokens = Math.max(tokens.input_tokens, input);
  tokens.cache_read_tokens = Math.max(tokens.cache_read_tokens, cacheRead);
  tokens.cache_write_tokens = Math.max(tokens.cache_write_tokens, cacheWrite);
  tokens.output_tokens = Math.max(tokens.output_tokens, count(usage['output_tokens']));
  return true;
}

/**
 * OpenAI: the Responses API's final event (`response.completed`, `.incomplete` or `.failed`)
 * or a whole response; Chat Completions' `usage` (`prompt_tokens`, `completion_tokens`).
 * `input_tokens` includes cached ones here.
 */
function readOpenAI(object: Json, tokens: MeasuredTokens): boolean {
  const response = isObject(object['response']) ? object['response'] : object;
  if (typeof response['model'] === 'string') tokens.model = response['model'];
  const usage = response['usage'];
  if (!isObject(usage)) return false;
  const inputDetails = isObject(usage['input_tokens_details'])
    ? usage['input_tokens_details']
    : isObject(usage['prompt_tokens_details'])
      ? usage['prompt_tokens_details']
      : {};
  tokens.input_tokens = count(usage['input_tokens'] ?? usage['prompt_tokens']);
  tokens.output_tokens = count(usage['output_tokens'] ?? usage['completion_tokens']);
  tokens.cache_read_tokens = count(inputDetails['cached_tokens']);
  return true;
}
