import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MODEL_PROXY_ROUTES, priceOf, type ModelApi, type ModelProxyRoute } from '@svc/protocol';
import { DEFAULT_RESERVED_OUTPUT_TOKENS, prepareRequestBody, readRequestBody, type ModelRequestBody } from './request-body.js';

const route = (api: ModelApi, path: string): ModelProxyRoute => MODEL_PROXY_ROUTES[api].find((candidate) => candidate.path === path)!;
const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const prepared = (api: ModelApi, path: string, body: Buffer) => prepareRequestBody(api, route(api, path), body) as ModelRequestBody;

describe('model proxy request body — reservations', () => {
  it("Anthropic: the request's max_tokens plus its input estimated at a token per 4 bytes, priced at its model", () => {
    const raw = json({ model: 'claude-sonnet-4-5', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'x'.repeat(3000) }] });
    const body = prepared('anthropic', '/v1/messages', raw);
    const input = Math.ceil(raw.length / 4);
    expect(body).toMatchObject({ model: 'claude-sonnet-4-5', streamed: true, estimatedInputTokens: input, outputCap: 1000 });
    expect(body.reservation.tokens).toBe(input + 1000);
    expect(body.reservation.cost_usd).toBeCloseTo((input * 3 + 1000 * 15) / 1e6, 12);
    // The body goes on byte for byte.
    expect(body.bytes).toBe(raw);
  });

  it("OpenAI: the Responses API's max_output_tokens, Chat Completions' max_completion_tokens or max_tokens; none named: the default", () => {
    expect(prepared('openai', '/v1/responses', json({ model: 'gpt-5', max_output_tokens: 500 })).outputCap).toBe(500);
    expect(prepared('openai', '/v1/chat/completions', json({ model: 'gpt-5', max_completion_tokens: 700, max_tokens: 9 })).outputCap).toBe(700);
    expect(prepared('openai', '/v1/chat/completions', json({ model: 'gpt-5', max_tokens: 9 })).outputCap).toBe(9);
    const codex = prepared('openai', '/v1/responses', json({ model: 'gpt-5.5', stream: true, input: [] }));
    expect(codex.outputCap).toBe(DEFAULT_RESERVED_OUTPUT_TOKENS);
    expect(codex.reservation.cost_usd).toBeCloseTo(
      (codex.estimatedInputTokens * priceOf('openai', 'gpt-5.5').input + DEFAULT_RESERVED_OUTPUT_TOKENS * 10) / 1e6,
      12,
    );
    // Nonsense caps are not caps.
    expect(prepared('anthropic', '/v1/messages', json({ max_tokens: -5 })).outputCap).toBe(DEFAULT_RESERVED_OUTPUT_TOKENS);
    expect(prepared('anthropic', '/v1/messages', json({ max_tokens: '100' })).outputCap).toBe(DEFAULT_RESERVED_OUTPUT_TOKENS);
  });

  it('counting tokens costs none and holds nothing', () => {
    expect(prepared('anthropic', '/v1/messages/count_tokens', json({ model: 'claude-sonnet-4-5', messages: [] }))).toMatchObject({
      costsTokens: false,
      reservation: { tokens: 0, cost_usd: 0 },
    });
    expect(prepared('anthropic', '/v1/messages', json({ model: 'claude-sonnet-4-5', messages: [] }))).toMatchObject({ costsTokens: true });
  });
});

describe('model proxy request body — what goes upstream', () => {
  it('a streamed Chat Completions request is asked for its usage, keeping its other stream options', () => {
    const body = prepared(
      'openai',
      '/v1/chat/completions',
      json({ model: 'gpt-5', stream: true, stream_options: { include_obfuscation: false }, messages: [] }),
    );
    expect(JSON.parse(body.bytes.toString())).toEqual({
      model: 'gpt-5',
      stream: true,
      stream_options: { include_obfuscation: false, include_usage: true },
      messages: [],
    });
    // An agent's include_usage: false does not survive.
    const refused = prepared('openai', '/v1/chat/completions', json({ stream: true, stream_options: { include_usage: false } }));
    expect(JSON.parse(refused.bytes.toString())).toMatchObject({ stream_options: { include_usage: true } });
  });

  it('a non-streamed Chat Completions request and a Responses request go on unchanged', () => {
    const whole = json({ model: 'gpt-5', messages: [] });
    expect(prepared('openai', '/v1/chat/completions', whole).bytes).toBe(whole);
    const responses = json({ model: 'gpt-5', stream: true, input: [] });
    expect(prepared('openai', '/v1/responses', responses).bytes).toBe(responses);
  });

  it('a Responses request in the background, or reading a stored response or conversation, is refused', () => {
    const responses = route('openai', '/v1/responses');
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5', background: true }))).toEqual({
      refusal: { kind: 'not_allowed', reason: 'a background response is not passed: it could not be metered' },
    });
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5', previous_response_id: 'resp_other' }))).toMatchObject({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('previous_response_id is not passed') },
    });
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5', conversation: 'conv_other' }))).toMatchObject({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('conversation is not passed') },
    });
    // What Codex sends passes.
    expect(prepareRequestBody('openai', responses, json({ model: 'gpt-5.5', stream: true, store: false, background: false, input: [] }))).toHaveProperty(
      'bytes',
    );
  });

  it('a body that is not a JSON object is refused as invalid', () => {
    expect(prepareRequestBody('anthropic', route('anthropic', '/v1/messages'), Buffer.from('{"model":'))).toEqual({
      refusal: { kind: 'invalid', reason: 'the request body is not JSON' },
    });
    expect(prepareRequestBody('openai', route('openai', '/v1/responses'), Buffer.from('[1,2]'))).toEqual({
      refusal: { kind: 'invalid', reason: 'the request body is not a JSON object' },
    });
  });

  it('a body larger than the limit is refused as too large, the rest unread', async () => {
    expect(await readRequestBody(Readable.from([Buffer.alloc(6), Buffer.alloc(6)]), 10)).toEqual({
      refusal: { kind: 'too_large', reason: 'the request body is larger than the model proxy reads (10 bytes)' },
    });
    expect(await readRequestBody(Readable.from([Buffer.from('{"a"'), Buffer.from(':1}')]), 10)).toEqual(Buffer.from('{"a":1}'));
  });

  it('a body cut short (the agent went away) is refused as invalid', async () => {
    const broken = new Readable({ read() {} });
    broken.push(Buffer.from('{"model":'));
    setImmediate(() => broken.destroy(new Error('aborted')));
    expect(await readRequestBody(broken)).toEqual({ refusal: { kind: 'invalid', reason: 'the request body was cut short' } });
  });
});
