import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type ModelAccess, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startMockAnthropic, startMockOpenAI, type MockAnthropic, type MockOpenAI } from '@svc/test-support/stand-ins';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

const ANTHROPIC_KEY = 'sk-ant-gateway-test-key';
const OPENAI_KEY = 'sk-proj-gateway-test-key';

describe('the model proxy: /v1/workers/{id}/model/{api}/*', () => {
  let gw: GatewayFixture;
  let base: string;
  let anthropic: MockAnthropic;
  let openai: MockOpenAI;
  /** An upstream that is not there. */
  let downUrl: string;

  beforeAll(async () => {
    [anthropic, openai] = await Promise.all([
      startMockAnthropic([{ text: 'Hello.' }, { text: 'Again.' }]),
      startMockOpenAI([{ text: 'Hi.' }, { text: 'Hi.' }]),
    ]);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    downUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    gw = await startGatewayFixture(
      { anthropicApiKey: ANTHROPIC_KEY, anthropicUpstreamUrl: anthropic.url, openaiApiKey: OPENAI_KEY, openaiUpstreamUrl: openai.url.replace(/\/v1$/, '') },
      undefined,
      { services: true },
    );
    base = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await Promise.all([anthropic?.stop(), openai?.stop()]);
  });

  const worker = (id: string, model: ModelAccess | undefined = { apis: ['anthropic'] }) => gw.createWorker(id, 'alice', 'running', model ? { model } : {});
  const messages = (workerId: string, token: string | undefined, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/workers/${workerId}/model/anthropic/v1/messages?beta=true`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': PLACEHOLDER_MODEL_KEY,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...headers,
      },
      body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] }),
    });
  const events = async (workerId: string) => {
    const token = await gw.userToken('alice');
    const response = await fetch(`${base}/v1/workers/${workerId}/sdk-events?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
    return ((await response.json()) as { items: StoredEvent[] }).items;
  };
  const workerView = async (workerId: string) => {
    const token = await gw.userToken('alice');
    return (await (await fetch(`${base}/v1/workers/${workerId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as Worker;
  };

  it("model proxy — forwards the stream with the control plane's key (never the agent's), meters it, and records a progress event", async () => {
    const token = await worker('wrk_mp_ok');
    const before = anthropic.requests().length;
    const response = await messages('wrk_mp_ok', token);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const body = await response.text();
    expect(body).toContain('event: message_start');
    expect(body).toContain('"text":"Hello."');
    const headers = anthropic.requestHeaders()[before]!;
    expect(headers['x-api-key']).toBe(ANTHROPIC_KEY);
    expect(headers['authorization']).toBeUndefined();
    expect(headers['anthropic-version']).toBe('2023-06-01');
    expect(anthropic.requests()[before]).toMatchObject({ model: 'claude-sonnet-4-5', stream: true });

    // The mock's usage: 100 in, 24 out; at Sonnet's price $3 and $15 per million.
    await waitFor('the usage', async () => (await workerView('wrk_mp_ok')).model_usage?.requests === 1);
    expect((await workerView('wrk_mp_ok')).model_usage).toEqual({
      requests: 1,
      refused: 0,
      input_tokens: 100,
      output_tokens: 24,
      cache_read_tokens: 0,
      cost_usd: (100 * 3 + 24 * 15) / 1e6,
    });
    const progress = await waitFor('the progress event', async () =>
      (await events('wrk_mp_ok')).find((e): e is StoredEvent<'progress'> => e.type === 'progress'),
    );
    expect(progress.data).toEqual({
      input_tokens: 100,
      output_tokens: 24,
      cache_read_tokens: 0,
      cost_usd: (100 * 3 + 24 * 15) / 1e6,
      measured_by: 'model_proxy',
    });
    expect(gw.logs.join('\n')).not.toContain(ANTHROPIC_KEY);
  });

  it('model proxy — concurrent requests of one worker all count (usage gathered, written compare-and-set)', async () => {
    const token = await worker('wrk_mp_many');
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => messages('wrk_mp_many', token).then(async (r) => ({ status: r.status, body: await r.text() }))),
    );
    expect(responses.every((r) => r.status === 200 && r.body.includes('message_stop'))).toBe(true);
    await waitFor('every request counted', async () => (await workerView('wrk_mp_many')).model_usage?.requests === 12, 5000);
    expect((await workerView('wrk_mp_many')).model_usage).toMatchObject({ input_tokens: 1200, output_tokens: 288 });
    // Each recorded progress event carries the totals so far; the last carries them all.
    const progress = await waitFor('the last progress event', async () =>
      (await events('wrk_mp_many')).filter((e): e is StoredEvent<'progress'> => e.type === 'progress').find((e) => e.data.input_tokens === 1200),
    );
    expect(progress.data).toMatchObject({ output_tokens: 288, measured_by: 'model_proxy' });
  });

  it('model proxy — OpenAI Responses: Bearer key, usage from response.completed (cached tokens are input too)', async () => {
    const token = await worker('wrk_mp_openai', { apis: ['openai'] });
    const before = openai.requests().length;
    const response = await fetch(`${base}/v1/workers/wrk_mp_openai/model/openai/v1/responses`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ model: 'gpt-5-mini', stream: true, input: [{ type: 'message', role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('response.completed');
    expect(openai.requestHeaders()[before]!['authorization']).toBe(`Bearer ${OPENAI_KEY}`);
    await waitFor('the usage', async () => (await workerView('wrk_mp_openai')).model_usage?.requests === 1);
    // 1000 in (200 of them cached), 50 out, at gpt-5-mini's $0.25 / $0.025 cached / $2 per million.
    expect((await workerView('wrk_mp_openai')).model_usage).toMatchObject({
      input_tokens: 1000,
      output_tokens: 50,
      cache_read_tokens: 200,
      cost_usd: (800 * 0.25 + 200 * 0.025 + 50 * 2) / 1e6,
    });
  });

  it("model proxy — a missing token, or another worker's, is 401 and nothing is forwarded", async () => {
    await worker('wrk_mp_victim');
    const otherToken = await worker('wrk_mp_other');
    const before = anthropic.requests().length;
    const missing = await messages('wrk_mp_victim', undefined);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ code: 'unauthorized' });
    const other = await messages('wrk_mp_victim', otherToken);
    expect(other.status).toBe(401);
    expect(await other.json()).toMatchObject({ code: 'unauthorized' });
    const placeholder = await messages('wrk_mp_victim', PLACEHOLDER_MODEL_KEY);
    expect(placeholder.status).toBe(401);
    expect(anthropic.requests().length).toBe(before);
  });

  it("model proxy — an API the worker's template does not name, or one svc does not proxy, is 404", async () => {
    const token = await worker('wrk_mp_apis');
    const before = openai.requests().length;
    const notNamed = await fetch(`${base}/v1/workers/wrk_mp_apis/model/openai/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: '{}',
    });
    expect(notNamed.status).toBe(404);
    expect((await notNamed.json()) as { message: string }).toMatchObject({
      code: 'not_found',
      message: expect.stringContaining('does not use the openai model API'),
    });
    const unknown = await fetch(`${base}/v1/workers/wrk_mp_apis/model/gemini/v1/x`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
      body: '{}',
    });
    expect(unknown.status).toBe(404);
    expect(openai.requests().length).toBe(before);
  });

  it("model proxy — past the budget a request is refused in the provider's shape; the history and the totals say why", async () => {
    const token = await worker('wrk_mp_budget', { apis: ['anthropic'], budget: { max_tokens: 50 } });
    expect((await messages('wrk_mp_budget', token)).status).toBe(200);
    await waitFor('the first request metered', async () => (await workerView('wrk_mp_budget')).model_usage?.requests === 1);
    const before = anthropic.requests().length;
    const refused = await messages('wrk_mp_budget', token);
    expect(refused.status).toBe(402);
    const body = (await refused.json()) as { type: string; error: { type: string; message: string } };
    expect(body).toMatchObject({ type: 'error', error: { type: 'billing_error' } });
    expect(body.error.message).toContain('token budget is used up (124 of max_tokens 50)');
    expect(anthropic.requests().length).toBe(before);
    expect((await workerView('wrk_mp_budget')).model_usage).toMatchObject({ requests: 1, refused: 1, budget_exhausted: true });
    const why = await waitFor('the refusal in the history', async () =>
      (await events('wrk_mp_budget')).find((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.subtype === 'model_budget_exhausted'),
    );
    expect(why.data).toMatchObject({ level: 'error', message: expect.stringContaining('max_tokens 50') });
  });

  it("model proxy — an upstream that is down: 502 at once in the provider's shape, recorded; the next request works again", async () => {
    const down = await startGatewayFixture({ anthropicApiKey: ANTHROPIC_KEY, anthropicUpstreamUrl: downUrl }, undefined, { services: true });
    try {
      const downBase = await down.app.listen({ host: '127.0.0.1', port: 0 });
      const token = await down.createWorker('wrk_mp_down', 'alice', 'running', { model: { apis: ['anthropic'] } });
      const started = Date.now();
      const response = await fetch(`${downBase}/v1/workers/wrk_mp_down/model/anthropic/v1/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: '{}',
      });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(response.status).toBe(502);
      expect(await response.json()).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringContaining('ECONNREFUSED') } });
    } finally {
      await down.stop();
    }
  }, 60_000);

  it('model proxy — a model API without a key in the control plane is 503 and says which setting is missing', async () => {
    const keyless = await startGatewayFixture({}, undefined, {});
    try {
      const token = await keyless.createWorker('wrk_mp_keyless', 'alice', 'running', { model: { apis: ['anthropic'] } });
      const response = await keyless.app.inject({
        method: 'POST',
        url: '/v1/workers/wrk_mp_keyless/model/anthropic/v1/messages',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: '{}',
      });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toMatchObject({ code: 'unavailable', message: expect.stringContaining('SVC_ANTHROPIC_API_KEY') });
    } finally {
      await keyless.stop();
    }
  });
});
