import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type ModelAccess, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { GEMINI_STAND_IN_USAGE, startMockGemini, type MockGemini } from '@svc/test-support/stand-ins';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

const GEMINI_KEY = 'AIza-gateway-test-key';

/** gemini-2.5-pro's price per million tokens: $1.25 in, $0.125 cached, $10 out. */
const STAND_IN_COST =
  ((GEMINI_STAND_IN_USAGE.promptTokenCount - GEMINI_STAND_IN_USAGE.cachedContentTokenCount) * 1.25 +
    GEMINI_STAND_IN_USAGE.cachedContentTokenCount * 0.125 +
    (GEMINI_STAND_IN_USAGE.candidatesTokenCount + GEMINI_STAND_IN_USAGE.thoughtsTokenCount) * 10) /
  1e6;

describe('the model proxy: the Gemini API (/v1/workers/{id}/model/gemini/*)', () => {
  let gw: GatewayFixture;
  let base: string;
  let gemini: MockGemini;

  beforeAll(async () => {
    gemini = await startMockGemini([{ text: 'Hello from the stand-in.' }]);
    gw = await startGatewayFixture({ geminiApiKey: GEMINI_KEY, geminiUpstreamUrl: gemini.url }, undefined, { services: true });
    base = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await gemini?.stop();
  });

  const worker = (id: string, model: ModelAccess = { apis: ['gemini'] }) => gw.createWorker(id, 'alice', 'running', { model });
  const contents = [{ role: 'user', parts: [{ text: 'hi' }] }];
  /** A request as Gemini CLI's client sends it: the key (a placeholder in the sandbox) in `x-goog-api-key`. */
  const call = (workerId: string, token: string, path: string, body: unknown = { contents }, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/workers/${workerId}/model/gemini${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': PLACEHOLDER_MODEL_KEY, authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
  const workerView = async (workerId: string) => {
    const token = await gw.userToken('alice');
    return (await (await fetch(`${base}/v1/workers/${workerId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as Worker;
  };
  const refusals = async (workerId: string) => {
    const token = await gw.userToken('alice');
    const response = await fetch(`${base}/v1/workers/${workerId}/sdk-events?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
    return ((await response.json()) as { items: StoredEvent[] }).items.filter(
      (e): e is StoredEvent<'system'> => e.type === 'system' && e.data.subtype === 'model_request_refused',
    );
  };

  it("streams streamGenerateContent with the control plane's key (never the placeholder) and meters it from usageMetadata", async () => {
    const token = await worker('wrk_gm_ok');
    const before = gemini.requests().length;
    const response = await call('wrk_gm_ok', token, '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    expect(await response.text()).toContain('Hello from the stand-in.');
    expect(gemini.seen().at(-1)).toBe('POST /v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    const headers = gemini.requestHeaders()[before]!;
    expect(headers['x-goog-api-key']).toBe(GEMINI_KEY);
    expect(headers['authorization']).toBeUndefined();
    expect(gemini.requests()[before]).toEqual({ contents });

    await waitFor('the usage', async () => (await workerView('wrk_gm_ok')).model_usage?.requests === 1);
    expect((await workerView('wrk_gm_ok')).model_usage).toEqual({
      requests: 1,
      refused: 0,
      input_tokens: GEMINI_STAND_IN_USAGE.promptTokenCount,
      output_tokens: GEMINI_STAND_IN_USAGE.candidatesTokenCount + GEMINI_STAND_IN_USAGE.thoughtsTokenCount,
      cache_read_tokens: GEMINI_STAND_IN_USAGE.cachedContentTokenCount,
      cost_usd: STAND_IN_COST,
    });
    expect(gw.logs.join('\n')).not.toContain(GEMINI_KEY);
  });

  it('meters a non-streamed generateContent alike; countTokens passes and costs nothing', async () => {
    const token = await worker('wrk_gm_json');
    const whole = await call('wrk_gm_json', token, '/v1beta/models/gemini-2.5-pro:generateContent');
    expect(whole.status).toBe(200);
    expect(await whole.json()).toMatchObject({ usageMetadata: GEMINI_STAND_IN_USAGE });
    const counted = await call('wrk_gm_json', token, '/v1beta/models/gemini-2.5-pro:countTokens');
    expect(counted.status).toBe(200);
    expect(await counted.json()).toEqual({ totalTokens: GEMINI_STAND_IN_USAGE.promptTokenCount });
    // Both forwarded; only the answer's tokens count.
    await waitFor('the usage', async () => (await workerView('wrk_gm_json')).model_usage?.requests === 2);
    expect((await workerView('wrk_gm_json')).model_usage).toMatchObject({ input_tokens: GEMINI_STAND_IN_USAGE.promptTokenCount, cost_usd: STAND_IN_COST });
  });

  it('the budget binds: past max_tokens a request is refused as RESOURCE_EXHAUSTED, and nothing goes upstream', async () => {
    const token = await worker('wrk_gm_budget', { apis: ['gemini'], budget: { max_tokens: 100 } });
    expect((await call('wrk_gm_budget', token, '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse')).status).toBe(200);
    await waitFor('metered', async () => (await workerView('wrk_gm_budget')).model_usage?.requests === 1);
    const before = gemini.requests().length;
    const refused = await call('wrk_gm_budget', token, '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse');
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as { error: { code: number; status: string; message: string } };
    expect(body.error).toMatchObject({ code: 429, status: 'RESOURCE_EXHAUSTED' });
    expect(body.error.message).toContain('token budget is used up (1250 of max_tokens 100)');
    expect(gemini.requests().length).toBe(before);
  });

  it('passes inference only: other paths, a key in the query, provider-run tools, fileData and cachedContent are refused, naming what', async () => {
    const token = await worker('wrk_gm_refused');
    const before = gemini.seen().length;
    const cases: Array<{ path: string; body?: unknown; headers?: Record<string, string>; says: string }> = [
      { path: '/v1beta/models', says: 'is not inference' },
      { path: '/v1beta/files', says: 'is not inference' },
      { path: '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=AIza-other', says: 'the query parameter "key"' },
      { path: '/v1beta/models/a:b:streamGenerateContent', says: 'is not inference' },
      { path: '/v1beta/tunedModels/x:generateContent', says: 'is not inference' },
      { path: '/v1beta/models/gemini-2.5-pro:generateContent', body: { contents, tools: [{ googleSearch: {} }] }, says: 'tools[0].googleSearch is not passed' },
      { path: '/v1beta/models/gemini-2.5-pro:generateContent', body: { contents, tools: [{ urlContext: {} }] }, says: 'tools[0].urlContext' },
      { path: '/v1beta/models/gemini-2.5-pro:generateContent', body: { contents, tools: [{ codeExecution: {} }] }, says: 'tools[0].codeExecution' },
      {
        path: '/v1beta/models/gemini-2.5-pro:generateContent',
        body: { contents: [{ role: 'user', parts: [{ fileData: { fileUri: 'https://example.com/x.pdf', mimeType: 'application/pdf' } }] }] },
        says: 'contents[0].parts[0].fileData is not passed',
      },
      {
        path: '/v1beta/models/gemini-2.5-pro:generateContent',
        body: { contents: [{ role: 'user', parts: [{ functionResponse: { name: 'f', response: {}, parts: [{ fileData: { fileUri: 'files/abc' } }] } }] }] },
        says: 'contents[0].parts[0].functionResponse.parts[0].fileData',
      },
      { path: '/v1beta/models/gemini-2.5-pro:generateContent', body: { contents, cachedContent: 'cachedContents/abc' }, says: 'cachedContent is not passed' },
      { path: '/v1beta/models/gemini-2.5-pro:generateContent', body: { contents, store: true }, says: 'store is not a field' },
      { path: '/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=json', says: 'is passed with ?alt=sse only, once' },
      {
        path: '/v1beta/models/gemini-2.5-pro:generateContent',
        body: { contents, generationConfig: { candidateCount: 4 } },
        says: 'generationConfig.candidateCount "4" is not passed',
      },
      { path: '/v1beta/models/gemini-2.5-pro:generateContent', headers: { 'x-goog-user-project': 'other' }, says: 'x-goog-user-project' },
    ];
    for (const refused of cases) {
      const response = await call('wrk_gm_refused', token, refused.path, refused.body, refused.headers);
      expect(response.status, refused.path).toBe(403);
      const body = (await response.json()) as { error: { status: string; message: string } };
      expect(body.error.status).toBe('PERMISSION_DENIED');
      expect(body.error.message, refused.path).toContain(refused.says);
    }
    expect(gemini.seen().length).toBe(before);
    await waitFor('every refusal in the history', async () => (await refusals('wrk_gm_refused')).length === cases.length);
  });
});
