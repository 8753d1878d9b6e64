import { describe, expect, it } from 'vitest';
import { CLAUDE_CODE_2_1_197_BETAS, CLAUDE_CODE_2_1_330_HEADERS, CODEX_0_169_0_HEADERS } from '../../test/recorded-cli-headers.js';
import { checkModelRequest, forwardedRequestHeaders, modelRequestLine } from './request-policy.js';

const line = (method: string, pathAndQuery: string) => modelRequestLine(method, `/v1/workers/wrk_1/model/api${pathAndQuery}`);

describe('model proxy request policy — what passes', () => {
  it("the agent's path is read raw from the gateway's URL, with its query apart", () => {
    expect(modelRequestLine('POST', '/v1/workers/wrk_1/model/anthropic/v1/messages?beta=true')).toEqual({
      method: 'POST',
      path: '/v1/messages',
      query: 'beta=true',
    });
    expect(modelRequestLine('HEAD', '/v1/workers/wrk_1/model/anthropic/')).toEqual({ method: 'HEAD', path: '/', query: '' });
    expect(modelRequestLine('POST', '/v1/workers/wrk_1/model/openai/v1/files%2F..%2Fx')).toMatchObject({ path: '/v1/files%2F..%2Fx' });
  });

  it('inference passes: Anthropic messages (with ?beta=true), count_tokens, the HEAD / probe; OpenAI responses and chat completions', () => {
    expect(checkModelRequest('anthropic', line('POST', '/v1/messages?beta=true'))).toMatchObject({ route: { kind: 'inference' } });
    expect(checkModelRequest('anthropic', line('POST', '/v1/messages/count_tokens?beta=true'))).toMatchObject({ route: { kind: 'count' } });
    expect(checkModelRequest('anthropic', line('HEAD', '/'))).toMatchObject({ route: { kind: 'probe' } });
    expect(checkModelRequest('openai', line('POST', '/v1/responses'))).toMatchObject({ route: { kind: 'inference' } });
    expect(checkModelRequest('openai', line('POST', '/v1/chat/completions'))).toMatchObject({ route: { kind: 'inference' } });
  });

  it('Gemini: the model is read from the path (one name: no `:`, `/` or empty), streamed with ?alt=sse; the key never in the query', () => {
    expect(checkModelRequest('gemini', line('POST', '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse'))).toMatchObject({
      route: { kind: 'inference' },
      model: 'gemini-2.5-pro',
    });
    expect(checkModelRequest('gemini', line('POST', '/v1/models/gemini-3-pro-preview:countTokens'))).toMatchObject({ route: { kind: 'count' } });
    for (const path of [
      '/v1beta/models/:generateContent',
      '/v1beta/models/a:b:generateContent',
      '/v1beta/models/a/b:generateContent',
      '/v1beta/models/gemini-2.5-pro',
    ])
      expect(checkModelRequest('gemini', line('POST', path)), path).toMatchObject({ refusal: { kind: 'not_allowed' } });
    expect(checkModelRequest('gemini', line('POST', '/v1beta/models/gemini-2.5-pro:generateContent?key=AIza'))).toMatchObject({
      refusal: { reason: expect.stringContaining('"key"') },
    });
    // A stream is metered as SSE only: without alt=sse it would come as one JSON array.
    for (const query of ['', '?alt=json', '?alt=sse&alt=json', '?alt=sse&alt=sse'])
      expect(checkModelRequest('gemini', line('POST', `/v1beta/models/gemini-2.5-pro:streamGenerateContent${query}`)), query).toMatchObject({
        refusal: { reason: expect.stringContaining('?alt=sse only, once') },
      });
  });

  it("every other method or path is refused as not inference, naming what passes; one API's paths are not the other's", () => {
    for (const [method, path] of [
      ['GET', '/v1/files'],
      ['DELETE', '/v1/files/file-abc'],
      ['POST', '/v1/batches'],
      ['POST', '/v1/messages/batches'],
      ['GET', '/v1/models'],
      ['GET', '/v1/messages'],
      ['POST', '/v1/messages/'],
      ['POST', '//v1/messages'],
      ['POST', '/v1/responses'],
      ['HEAD', '/v1/messages'],
    ] as const) {
      const checked = checkModelRequest('anthropic', line(method, path));
      expect(checked, `${method} ${path}`).toEqual({
        refusal: { kind: 'not_allowed', reason: expect.stringContaining('the anthropic model proxy passes only POST /v1/messages') },
      });
    }
    expect(checkModelRequest('openai', line('GET', '/v1/responses/resp_123'))).toMatchObject({ refusal: { kind: 'not_allowed' } });
    expect(checkModelRequest('openai', line('POST', '/v1/messages'))).toMatchObject({ refusal: { kind: 'not_allowed' } });
    expect(checkModelRequest('openai', line('HEAD', '/'))).toMatchObject({ refusal: { kind: 'not_allowed' } });
  });

  it('percent-encoding, backslashes and "." or ".." segments are refused, whatever the path they would reach', () => {
    for (const path of ['/v1/messages%2F..%2Ffiles', '/v1/messages%2f', '/v1/%6Dessages', '/v1/messages%5cfiles'])
      expect(checkModelRequest('anthropic', line('POST', path))).toEqual({
        refusal: { kind: 'not_allowed', reason: expect.stringContaining('percent-encoding') },
      });
    expect(checkModelRequest('anthropic', line('POST', '/v1/files/../messages'))).toEqual({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('".." segment') },
    });
    expect(checkModelRequest('openai', line('POST', '/v1/./responses'))).toMatchObject({ refusal: { reason: expect.stringContaining('segment') } });
    expect(checkModelRequest('openai', line('POST', '/v1\\responses'))).toMatchObject({ refusal: { reason: expect.stringContaining('backslash') } });
  });

  it('a query parameter the route does not name is refused', () => {
    expect(checkModelRequest('anthropic', line('POST', '/v1/messages?beta=true&after_id=x'))).toEqual({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('"after_id"') },
    });
    expect(checkModelRequest('openai', line('POST', '/v1/responses?beta=true'))).toMatchObject({ refusal: { kind: 'not_allowed' } });
  });
});

describe('model proxy request policy — headers', () => {
  it("Claude Code's headers (2.1.197 and 2.1.330) and Codex's pass as they were sent", () => {
    expect(forwardedRequestHeaders('anthropic', CLAUDE_CODE_2_1_330_HEADERS)).toEqual({ headers: CLAUDE_CODE_2_1_330_HEADERS });
    expect(forwardedRequestHeaders('anthropic', { ...CLAUDE_CODE_2_1_330_HEADERS, 'anthropic-beta': CLAUDE_CODE_2_1_197_BETAS })).toEqual({
      headers: { ...CLAUDE_CODE_2_1_330_HEADERS, 'anthropic-beta': CLAUDE_CODE_2_1_197_BETAS },
    });
    expect(forwardedRequestHeaders('openai', CODEX_0_169_0_HEADERS)).toEqual({ headers: CODEX_0_169_0_HEADERS });
  });

  it("headers not on the API's list are dropped: credentials, hop-by-hop, cookies, forwarding, the other API's", () => {
    const forwarded = forwardedRequestHeaders('anthropic', {
      'content-type': 'application/json',
      authorization: 'Bearer worker-token',
      'x-api-key': 'svc-placeholder-not-a-key',
      host: '127.0.0.1:9',
      connection: 'keep-alive',
      'accept-encoding': 'gzip, br',
      'content-length': '12',
      cookie: 'a=b',
      'x-forwarded-for': '10.0.0.1',
      'x-request-id': 'r1',
      'openai-beta': 'assistants=v2',
      'x-codex-window-id': 'w',
    });
    expect(forwarded).toEqual({ headers: { 'content-type': 'application/json' } });
  });

  it('OpenAI-Organization and OpenAI-Project refuse the request, on either API', () => {
    for (const api of ['openai', 'anthropic'] as const) {
      expect(forwardedRequestHeaders(api, { 'openai-organization': 'org-other' })).toEqual({
        refusal: { kind: 'not_allowed', reason: expect.stringContaining('openai-organization') },
      });
      expect(forwardedRequestHeaders(api, { 'openai-project': 'proj_other' })).toMatchObject({ refusal: { kind: 'not_allowed' } });
    }
  });

  it('an anthropic-beta outside the list refuses the request and is named', () => {
    expect(forwardedRequestHeaders('anthropic', { 'anthropic-beta': 'claude-code-20250219, files-api-2025-04-14' })).toEqual({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('"files-api-2025-04-14" is not passed') },
    });
    expect(forwardedRequestHeaders('anthropic', { 'anthropic-beta': 'mcp-client-2025-11-20,skills-2025-10-02' })).toEqual({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('"mcp-client-2025-11-20", "skills-2025-10-02" are not passed') },
    });
  });

  it("the web search beta is not passed: Anthropic's server-side web search is not (Claude Code sends no such beta)", () => {
    expect(forwardedRequestHeaders('anthropic', { ...CLAUDE_CODE_2_1_330_HEADERS, 'anthropic-beta': 'claude-code-20250219,web-search-2025-03-05' })).toEqual({
      refusal: { kind: 'not_allowed', reason: expect.stringContaining('"web-search-2025-03-05" is not passed') },
    });
  });

  it('a compressed request body is refused (the proxy reads it); identity passes', () => {
    expect(forwardedRequestHeaders('openai', { 'content-encoding': 'zstd' })).toEqual({
      refusal: { kind: 'invalid', reason: expect.stringContaining('content-encoding "zstd"') },
    });
    expect(forwardedRequestHeaders('openai', { 'content-encoding': 'identity' })).toEqual({ headers: {} });
  });
});
