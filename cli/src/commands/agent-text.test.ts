import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { EXIT } from '../exit-codes.js';
import { svc } from '../../test/run-svc.js';

/** Control characters a terminal would act on (tab and newline are text). */
function controlsIn(text: string): string[] {
  return [...text].filter((char) => {
    const code = char.charCodeAt(0);
    return (code < 0x20 && char !== '\n' && char !== '\t') || (code >= 0x7f && code <= 0x9f);
  });
}

const session = {
  id: 'ses_1',
  worker_id: 'wrk_1',
  template: 'demo',
  status: 'failed',
  owner: 'me',
  created_at: '2026-11-22T10:00:00.000Z',
  updated_at: '2026-11-22T10:00:00.000Z',
  failure: { step: 'sandbox', reason: 'bwrap: \u001b[8mcannot\u009b2J mount' },
};

describe('svc commands — agent and sandbox text is shown, its control characters never reach the terminal', () => {
  let gateway: Server;
  let url: string;
  beforeAll(async () => {
    // A stand-in of the gateway: one session, and its logs as the sandbox's programs wrote them.
    gateway = createServer((request, response) => {
      const json = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.url === '/v1/sessions/ses_1') return json(200, session);
      return json(404, { code: 'not_found', message: 'no such route' });
    });
    const sockets = new WebSocketServer({ server: gateway });
    sockets.on('connection', (socket) => {
      socket.send(
        JSON.stringify({ kind: 'lines', lines: ['\u001b[32mgreen\u001b[0m\tok', 'quiet \u001b[8mhidden', '\u001b]52;c;cm0gLXJmIH4=\u0007copied\u007f\u009b'] }),
      );
      socket.send(JSON.stringify({ kind: 'end', reason: 'ended\u0007' }));
      socket.close(1000);
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    gateway.closeAllConnections();
    await new Promise((resolve) => gateway.close(resolve));
  });

  it('svc logs — every escape in the sandbox output is shown as \\xNN (colours too); tabs stay', async () => {
    const logs = await svc('logs', 'ses_1', '--url', url, '--token', 't');
    expect(logs.code).toBe(EXIT.ok);
    expect(controlsIn(logs.stdout + logs.stderr)).toEqual([]);
    expect(logs.stdout).toBe('\\x1b[32mgreen\\x1b[0m\tok\nquiet \\x1b[8mhidden\n\\x1b]52;c;cm0gLXJmIH4=\\x07copied\\x7f\\x9b\n');
    expect(logs.stderr).toBe('-- ended\\x07\n');
  });

  it('svc logs --json — the frames as JSON with every control character escaped, the same values', async () => {
    const logs = await svc('logs', 'ses_1', '--json', '--url', url, '--token', 't');
    expect(logs.code).toBe(EXIT.ok);
    expect(controlsIn(logs.stdout)).toEqual([]);
    const frames = logs.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    expect(frames[0]).toEqual({
      kind: 'lines',
      lines: ['\u001b[32mgreen\u001b[0m\tok', 'quiet \u001b[8mhidden', '\u001b]52;c;cm0gLXJmIH4=\u0007copied\u007f\u009b'],
    });
    expect(frames[1]).toEqual({ kind: 'end', reason: 'ended\u0007' });
  });

  it("svc sessions get — a failure's reason is shown with its escapes, in the table", async () => {
    const shown = await svc('sessions', 'get', 'ses_1', '--url', url, '--token', 't');
    expect(shown.code).toBe(EXIT.ok);
    expect(controlsIn(shown.stdout)).toEqual([]);
    expect(shown.stdout).toContain('sandbox: bwrap: \\x1b[8mcannot\\x9b2J mount');
  });
});
