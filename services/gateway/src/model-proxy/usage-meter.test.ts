import { describe, expect, it } from 'vitest';
import { createUsageMeter } from './usage-meter.js';

const SSE = 'text/event-stream';
const event = (name: string, data: unknown) => Buffer.from(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
const request = { model: 'claude-sonnet-4-5', estimatedInputTokens: 250, costsTokens: true };

const messageStart = event('message_start', {
  type: 'message_start',
  message: { model: 'claude-sonnet-4-5', usage: { input_tokens: 100, cache_read_input_tokens: 20, output_tokens: 1 } },
});
const textDelta = (text: string) => event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } });
const messageDelta = event('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 24 } });

describe('model proxy usage meter — whole answers', () => {
  it('Anthropic stream: input with the cache from message_start, output from message_delta (the final count, not an estimate)', () => {
    const meter = createUsageMeter('anthropic', 200, SSE, request);
    for (const chunk of [messageStart, textDelta('Hello.'.repeat(100)), messageDelta]) meter.write(chunk);
    expect(meter.end()).toEqual({ model: 'claude-sonnet-4-5', input_tokens: 120, output_tokens: 24, cache_read_tokens: 20, cache_write_tokens: 0 });
  });

  it('a chunk boundary anywhere in a line changes nothing', () => {
    const whole = Buffer.concat([messageStart, textDelta('Hello.'), messageDelta]);
    const meter = createUsageMeter('anthropic', 200, SSE, request);
    for (let at = 0; at < whole.length; at += 7) meter.write(whole.subarray(at, at + 7));
    expect(meter.end()).toMatchObject({ input_tokens: 120, output_tokens: 24 });
  });

  it('Gemini stream: the counts of the chunk with a finishReason (thoughts are output, cached tokens input too)', () => {
    const meter = createUsageMeter('gemini', 200, SSE, { model: 'gemini-2.5-pro', estimatedInputTokens: 9, costsTokens: true });
    const chunk = (data: unknown) => Buffer.from(`data: ${JSON.stringify(data)}\r\n\r\n`);
    meter.write(chunk({ candidates: [{ content: { parts: [{ text: 'Hi' }] } }], usageMetadata: { promptTokenCount: 500 }, modelVersion: 'gemini-2.5-flash' }));
    meter.write(
      chunk({
        candidates: [{ content: { parts: [{ text: '!' }] }, finishReason: 'STOP' }],
        usageMetadata: { promptTokenCount: 500, cachedContentTokenCount: 100, candidatesTokenCount: 30, thoughtsTokenCount: 12, totalTokenCount: 542 },
      }),
    );
    expect(meter.end()).toEqual({ model: 'gemini-2.5-flash', input_tokens: 500, output_tokens: 42, cache_read_tokens: 100, cache_write_tokens: 0 });
  });

  it('Gemini: a whole answer that is an array of chunks is read chunk by chunk', () => {
    const meter = createUsageMeter('gemini', 200, 'application/json', { model: 'gemini-2.5-pro', estimatedInputTokens: 9, costsTokens: true });
    meter.write(
      Buffer.from(
        JSON.stringify([
          { candidates: [{ content: { parts: [{ text: 'a' }] } }], usageMetadata: { promptTokenCount: 40 } },
          {
            candidates: [{ content: { parts: [{ text: 'b' }] }, finishReason: 'STOP' }],
            usageMetadata: { promptTokenCount: 40, candidatesTokenCount: 2, thoughtsTokenCount: 900 },
          },
        ]),
      ),
    );
    expect(meter.end()).toMatchObject({ input_tokens: 40, output_tokens: 902 });
  });

  it('Gemini stream cut before its finishReason: output at least what its text and function calls amount to', () => {
    const meter = createUsageMeter('gemini', 200, SSE, { model: 'gemini-2.5-pro', estimatedInputTokens: 9, costsTokens: true });
    const text = 'x'.repeat(300);
    meter.write(Buffer.from(`data: ${JSON.stringify({ candidates: [{ content: { parts: [{ text }] } }], usageMetadata: { promptTokenCount: 700 } })}\n\n`));
    expect(meter.end()).toEqual({ model: 'gemini-2.5-pro', input_tokens: 700, output_tokens: 100, cache_read_tokens: 0, cache_write_tokens: 0 });
  });

  it("Chat Completions stream: the usage chunk that include_usage adds (earlier chunks' usage: null)", () => {
    const meter = createUsageMeter('openai', 200, SSE, { model: 'gpt-5', estimatedInputTokens: 9, costsTokens: true });
    meter.write(Buffer.from(`data: ${JSON.stringify({ choices: [{ delta: { content: 'Hi' } }], usage: null })}\n\n`));
    meter.write(
      Buffer.from(
        `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 300, completion_tokens: 20, prompt_tokens_details: { cached_tokens: 100 } } })}\n\n`,
      ),
    );
    meter.write(Buffer.from('data: [DONE]\n\n'));
    expect(meter.end()).toEqual({ model: 'gpt-5', input_tokens: 300, output_tokens: 20, cache_read_tokens: 100, cache_write_tokens: 0 });
  });

  it('a non-streamed JSON answer is read at its end; an error answer carries no usage', () => {
    const whole = createUsageMeter('anthropic', 200, 'application/json', request);
    whole.write(Buffer.from(JSON.stringify({ type: 'message', model: 'claude-haiku-4-5', usage: { input_tokens: 7, output_tokens: 3 } })));
    expect(whole.end()).toMatchObject({ model: 'claude-haiku-4-5', input_tokens: 7, output_tokens: 3 });
    const error = createUsageMeter('anthropic', 529, 'application/json', request);
    error.write(Buffer.from('{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'));
    expect(error.end()).toBeUndefined();
  });
});

describe('model proxy usage meter — answers without their final count (cut short, or ended without one)', () => {
  it("Anthropic: the input message_start gave, the output at least the streamed text's characters / 3", () => {
    const meter = createUsageMeter('anthropic', 200, SSE, request);
    for (const chunk of [messageStart, textDelta('a'.repeat(30)), textDelta('b'.repeat(31))]) meter.write(chunk);
    expect(meter.end()).toEqual({ model: 'claude-sonnet-4-5', input_tokens: 120, output_tokens: 21, cache_read_tokens: 20, cache_write_tokens: 0 });
  });

  it('tool input and thinking count as generated text too', () => {
    const meter = createUsageMeter('anthropic', 200, SSE, request);
    meter.write(messageStart);
    meter.write(event('content_block_delta', { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'x'.repeat(30) } }));
    meter.write(event('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'thinking_delta', thinking: 'y'.repeat(30) } }));
    expect(meter.end()).toMatchObject({ output_tokens: 20 });
  });

  it('Responses API: no count before response.completed, so the input is the estimate from the request and the output the deltas', () => {
    const meter = createUsageMeter('openai', 200, SSE, { model: 'gpt-5', estimatedInputTokens: 250, costsTokens: true });
    meter.write(event('response.created', { type: 'response.created', response: { id: 'r1', usage: null } }));
    meter.write(event('response.output_text.delta', { type: 'response.output_text.delta', delta: 'z'.repeat(45) }));
    meter.write(event('response.function_call_arguments.delta', { type: 'response.function_call_arguments.delta', delta: 'q'.repeat(15) }));
    expect(meter.end()).toEqual({ model: 'gpt-5', input_tokens: 250, output_tokens: 20, cache_read_tokens: 0, cache_write_tokens: 0 });
  });

  it('Chat Completions without its usage chunk: the estimate, with tool-call arguments', () => {
    const meter = createUsageMeter('openai', 200, SSE, { model: 'gpt-5', estimatedInputTokens: 40, costsTokens: true });
    meter.write(
      Buffer.from(
        `data: ${JSON.stringify({ choices: [{ delta: { content: 'c'.repeat(3), tool_calls: [{ function: { arguments: 'd'.repeat(27) } }] } }] })}\n\n`,
      ),
    );
    expect(meter.end()).toMatchObject({ input_tokens: 40, output_tokens: 10 });
  });

  it('a non-streamed answer cut short: its bytes received count as output', () => {
    const meter = createUsageMeter('anthropic', 200, 'application/json', request);
    const received = Buffer.from(`{"type":"message","content":[{"type":"text","text":"${'t'.repeat(100)}`);
    meter.write(received);
    expect(meter.end()).toMatchObject({ input_tokens: 250, output_tokens: Math.ceil(received.length / 3) });
  });

  it('an error answer cut short is not estimated', () => {
    const meter = createUsageMeter('anthropic', 429, 'application/json', request);
    meter.write(Buffer.from('{"type":"error",'));
    expect(meter.end()).toBeUndefined();
  });

  it('a stream that ends normally without its final count is estimated, not metered as zero', () => {
    // An Anthropic stream whose message_delta never came, and a Responses stream whose last event has no usage.
    const anthropic = createUsageMeter('anthropic', 200, SSE, request);
    for (const chunk of [messageStart, textDelta('a'.repeat(60))]) anthropic.write(chunk);
    anthropic.write(event('message_stop', { type: 'message_stop' }));
    expect(anthropic.end()).toMatchObject({ input_tokens: 120, output_tokens: 20 });
    const responses = createUsageMeter('openai', 200, SSE, { model: 'gpt-5', estimatedInputTokens: 250, costsTokens: true });
    responses.write(event('response.output_text.delta', { type: 'response.output_text.delta', delta: 'z'.repeat(30) }));
    responses.write(event('response.completed', { type: 'response.completed', response: { id: 'r1', usage: null } }));
    expect(responses.end()).toEqual({ model: 'gpt-5', input_tokens: 250, output_tokens: 10, cache_read_tokens: 0, cache_write_tokens: 0 });
    // A stream that said nothing at all still costs its input.
    expect(createUsageMeter('openai', 200, SSE, { model: 'gpt-5', estimatedInputTokens: 7, costsTokens: true }).end()).toMatchObject({
      input_tokens: 7,
      output_tokens: 0,
    });
  });

  it('a whole JSON answer without usage is estimated from its bytes', () => {
    const meter = createUsageMeter('openai', 200, 'application/json', { model: 'gpt-5', estimatedInputTokens: 30, costsTokens: true });
    const answer = Buffer.from(JSON.stringify({ id: 'resp_1', output: [{ type: 'message', content: [{ type: 'output_text', text: 'x'.repeat(60) }] }] }));
    meter.write(answer);
    expect(meter.end()).toMatchObject({ input_tokens: 30, output_tokens: Math.ceil(answer.length / 3) });
  });

  it('a token count (it costs nothing) is never estimated, whole or cut short', () => {
    const count = createUsageMeter('anthropic', 200, 'application/json', { ...request, costsTokens: false });
    count.write(Buffer.from('{"input_tokens":'));
    expect(count.end()).toBeUndefined();
  });
});
