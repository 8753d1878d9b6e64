import { describe, expect, it } from 'vitest';
import { WorkerView } from '@svc/viewer';
import type { Worker } from '@svc/protocol';
import { ApiError, type Api } from '../api.js';
import { personActions } from './attach.js';

const WORKER: Worker = { worker_id: 'wrk_1', owner: 'alice', status: 'running', updated_at: '2025-01-01T00:00:00.000Z' };

/** The gateway's side: every request recorded, answered by `answer` (a throw is a refusal). */
function fakeApi(answer: (path: string) => unknown) {
  const requests: Array<{ method: string; path: string; body: unknown }> = [];
  const api: Api = {
    url: 'http://gateway.test',
    request: <T>(method: string, path: string, body?: unknown) => {
      requests.push({ method, path, body });
      return Promise.resolve().then(() => answer(path) as T);
    },
    text: () => Promise.reject(new Error('no text answers here')),
    socket: () => {
      throw new Error('no socket here');
    },
  };
  return { api, requests };
}
const settled = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('svc attach — what a person does from the screen', () => {
  it('a one-shot worker (or one with no mode) gets no composer and no interrupt', () => {
    const { api } = fakeApi(() => ({}));
    for (const worker of [WORKER, { ...WORKER, mode: 'one_shot' as const }])
      expect(personActions(api, new WorkerView({ readOnly: false }), worker).conversation).toBeUndefined();
  });

  it('an allow that is a vote toward a quorum (202, docs/teams.md) says so: the request waits for more people', async () => {
    const { api, requests } = fakeApi(() => ({
      vote: { request_id: 'req_9', voter: 'bob', decision: 'allow', at: '2026-11-27T00:00:00.000Z' },
      allows: 1,
      quorum: 2,
      voters: ['bob'],
    }));
    const model = new WorkerView({ readOnly: false });
    personActions(api, model, WORKER).decide('req_9', 'allow');
    await settled();
    expect(requests).toEqual([{ method: 'POST', path: '/v1/workers/wrk_1/control', body: { request_id: 'req_9', decision: 'allow' } }]);
    expect(model.notices.at(-1)).toEqual({ text: 'req_9: your vote is counted (1 of 2); it waits for 1 more', level: 'info' });
  });

  it('a conversation: a message goes to POST /messages with an id of its own, an interrupt to POST /interrupt', async () => {
    const { api, requests } = fakeApi((path) => (path.endsWith('/interrupt') ? { interrupt_id: 'int_1' } : { message_id: 'msg_1' }));
    const model = new WorkerView({ readOnly: false });
    const { conversation } = personActions(api, model, { ...WORKER, mode: 'conversation' });
    expect(await conversation!.send('run the tests')).toBe(true);
    expect(await conversation!.send('run the tests')).toBe(true);
    conversation!.interrupt();
    await settled();
    expect(requests.map(({ method, path }) => `${method} ${path}`)).toEqual([
      'POST /v1/workers/wrk_1/messages',
      'POST /v1/workers/wrk_1/messages',
      'POST /v1/workers/wrk_1/interrupt',
    ]);
    const [first, second] = requests.map((request) => request.body as { text: string; client_message_id: string });
    expect(first).toEqual({ text: 'run the tests', client_message_id: expect.stringMatching(/^[A-Za-z0-9._:-]+$/) as unknown as string });
    // Two messages that read the same, each taken, are two messages.
    expect(second!.client_message_id).not.toBe(first!.client_message_id);
    expect(model.notices).toEqual([]);
  });

  it('a message not taken (the network, say) and sent again keeps its id: the gateway stores it once', async () => {
    let failing = true;
    const { api, requests } = fakeApi(() => {
      if (failing) throw new Error('fetch failed');
      return { message_id: 'msg_1' };
    });
    const { conversation } = personActions(api, new WorkerView({ readOnly: false }), { ...WORKER, mode: 'conversation' });
    expect(await conversation!.send('deploy it')).toBe(false);
    failing = false;
    expect(await conversation!.send('deploy it')).toBe(true);
    const [tried, again] = requests.map((request) => (request.body as { client_message_id: string }).client_message_id);
    expect(again).toBe(tried);
  });

  it("a refusal is a notice with the API's message and code; worker_ended turns the view read-only", async () => {
    const refusals: Record<string, ApiError> = {
      messages: new ApiError('payload_too_large', 'the message is longer than 32768 characters', 413),
      interrupt: new ApiError('worker_ended', 'worker wrk_1 has ended', 409),
    };
    const { api } = fakeApi((path) => {
      throw refusals[path.split('/').at(-1)!];
    });
    const model = new WorkerView({ readOnly: false });
    const { conversation } = personActions(api, model, { ...WORKER, mode: 'conversation' });
    expect(await conversation!.send('x'.repeat(40_000))).toBe(false);
    expect(model.notices.at(-1)).toEqual({ text: 'the message was not sent: the message is longer than 32768 characters (payload_too_large)', level: 'error' });
    expect(model.readOnly).toBe(false);
    conversation!.interrupt();
    await settled();
    expect(model.readOnly).toBe(true);
    expect(model.notices.map((notice) => notice.text).slice(-2)).toEqual([
      'read-only: the worker has ended',
      'the interrupt was not sent: worker wrk_1 has ended (worker_ended)',
    ]);
  });
});
