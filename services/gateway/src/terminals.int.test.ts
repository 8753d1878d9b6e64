import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { TERMINAL_CLOSE, type ListResponseOf, type StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

/** A WebSocket's first answer: open, or refused with a status and body. */
function connect(url: string, token: string): Promise<{ socket: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    socket.once('open', () => resolve({ socket }));
    socket.once('unexpected-response', (_request, response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    socket.once('error', reject);
  });
}

describe('terminals: a person’s WebSocket and the sandbox’s, relayed through the gateway', () => {
  let gw: GatewayFixture;
  let alice: string;
  let bob: string;
  let worker: string;
  let publicUrl: string;
  let workerUrl: string;

  beforeAll(async () => {
    gw = await startGatewayFixture({}, [], { services: true });
    [alice, bob] = await Promise.all([gw.userToken('alice'), gw.userToken('bob')]);
    worker = await gw.createWorker('wrk_term', 'alice', 'running');
    await gw.createWorker('wrk_term_done', 'alice', 'completed');
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    publicUrl = `ws://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => gw.app.workerListener.listen(0, '127.0.0.1', resolve));
    workerUrl = `ws://127.0.0.1:${(gw.app.workerListener.address() as AddressInfo).port}`;
  }, 60_000);
  afterAll(() => gw?.stop());

  const events = async () =>
    (await gw.app.inject({ url: '/v1/workers/wrk_term/sdk-events', headers: { authorization: `Bearer ${alice}` } })).json<ListResponseOf<StoredEvent>>().items;

  it('the request reaches the history; the sandbox end connects with the worker token; bytes pass both ways; the shell ending closes the person’s end', async () => {
    const person = await connect(`${publicUrl}/v1/workers/wrk_term/terminal?cols=100&rows=30`, alice);
    if (!('socket' in person)) throw new Error(`refused: ${person.status} ${person.body}`);
    const request = await waitFor('the terminal request', async () => (await events()).find((event) => event.type === 'system'));
    expect(request).toMatchObject({ source: 'user:api:alice', data: { subtype: 'terminal_requested', details: { cols: 100, rows: 30 } } });
    const terminalId = String((request.data as { details: Record<string, unknown> }).details['terminal_id']);
    const sandbox = await connect(`${workerUrl}/v1/workers/wrk_term/terminals/${terminalId}`, worker);
    if (!('socket' in sandbox)) throw new Error(`refused: ${sandbox.status} ${sandbox.body}`);
    const typed = new Promise<string>((resolve) => sandbox.socket.once('message', (data: Buffer) => resolve(data.toString())));
    const shown = new Promise<string>((resolve) => person.socket.once('message', (data: Buffer) => resolve(data.toString())));
    await waitFor('both ends relayed', async () => {
      person.socket.send(Buffer.from('ls\r'));
      return true;
    });
    expect(await typed).toBe('ls\r');
    sandbox.socket.send(Buffer.from('README.md\r\n'), { binary: true });
    expect(await shown).toBe('README.md\r\n');
    const closed = new Promise<number>((resolve) => person.socket.once('close', (code: number) => resolve(code)));
    sandbox.socket.close(TERMINAL_CLOSE.shellEnded, 'the shell exited (0)');
    expect(await closed).toBe(TERMINAL_CLOSE.shellEnded);
  });

  it('refused before the upgrade: someone else (404), an ended worker (409); the sandbox end with another token (403)', async () => {
    expect(await connect(`${publicUrl}/v1/workers/wrk_term/terminal`, bob)).toMatchObject({ status: 404, body: expect.stringContaining('worker_not_found') });
    expect(await connect(`${publicUrl}/v1/workers/wrk_term_done/terminal`, alice)).toMatchObject({
      status: 409,
      body: expect.stringContaining('worker_ended'),
    });
    const other = await gw.createWorker('wrk_term_other', 'alice', 'running');
    expect(await connect(`${workerUrl}/v1/workers/wrk_term/terminals/trm_x`, other)).toMatchObject({ status: 403 });
    // A sandbox opening ends of its own (no person asked) holds at most 8 on a gateway.
    const ends = [];
    for (let i = 0; i < 8; i++) ends.push(await connect(`${workerUrl}/v1/workers/wrk_term_other/terminals/trm_spare${i}`, other));
    expect(ends.every((end) => 'socket' in end)).toBe(true);
    expect(await connect(`${workerUrl}/v1/workers/wrk_term_other/terminals/trm_spare8`, other)).toMatchObject({ status: 429 });
    for (const end of ends) if ('socket' in end) end.socket.close();
  });
});
