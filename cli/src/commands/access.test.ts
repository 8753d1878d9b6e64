import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AccessEntry, Session } from '@svc/protocol';
import { EXIT } from '../exit-codes.js';
import { svc } from '../../test/run-svc.js';
import { editedAccess, editsOf } from './access.js';

const initial: AccessEntry[] = [
  { principal: 'user:erin', role: 'operator' },
  { principal: 'group:oncall', role: 'viewer' },
];

describe('svc access', () => {
  let dir: string;
  let gateway: Server;
  let url: string;
  /** The session the stand-in keeps, its list replaced by each PUT it lets through. */
  let session: Session;
  const puts: Array<{ url: string; authorization: string | undefined; body: unknown }> = [];
  const as = (token: string, ...argv: string[]) => svc('access', ...argv, '--url', url, '--token', token);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-access-'));
    process.env['SVC_CONFIG'] = path.join(dir, 'config.json');
    // A stand-in of the gateway (docs/teams.md): the owner's token may replace the list; erin's, an operator's, may only see it.
    gateway = createServer((incoming, response) => {
      let text = '';
      incoming.on('data', (chunk: Buffer) => (text += chunk.toString()));
      incoming.on('end', () => {
        const json = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
        if (incoming.url === '/v1/sessions/ses_missing') return json(404, { code: 'session_not_found', message: 'session ses_missing does not exist' });
        if (incoming.method === 'GET' && incoming.url === '/v1/sessions/ses_1') return json(200, session);
        if (incoming.method === 'PUT' && incoming.url === '/v1/sessions/ses_1/access') {
          puts.push({ url: incoming.url, authorization: incoming.headers.authorization, body: JSON.parse(text) as unknown });
          if (incoming.headers.authorization !== 'Bearer alice-token')
            return json(403, {
              code: 'role_required',
              message: 'you are an operator of session ses_1; this needs an admin (docs/teams.md)',
              details: { role: 'operator', needed: 'admin' },
            });
          session = { ...session, access: (JSON.parse(text) as { access: AccessEntry[] }).access };
          return json(200, session);
        }
        return json(404, { code: 'not_found', message: 'no such route' });
      });
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  beforeEach(() => {
    puts.length = 0;
    session = {
      id: 'ses_1',
      worker_id: 'wrk_1',
      template: 'demo',
      status: 'running',
      owner: 'alice',
      created_at: '2026-11-27T10:00:00.000Z',
      updated_at: '2026-11-27T10:00:00.000Z',
      access: initial,
    };
  });
  afterAll(async () => {
    delete process.env['SVC_CONFIG'];
    await new Promise((resolve) => gateway.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('access — the owner, then each entry of the list; --json prints the session', async () => {
    expect(await as('erin-token', 'ses_1')).toEqual({
      code: EXIT.ok,
      stdout: 'PRINCIPAL     ROLE\nuser:alice    admin (owner)\nuser:erin     operator\ngroup:oncall  viewer\n',
      stderr: '',
    });
    expect(JSON.parse((await as('erin-token', 'ses_1', '--json')).stdout)).toEqual(session);
    // A principal is whatever a token's sub or group says: shown with its escapes, never run.
    session.access = [{ principal: 'user:ev\u001b[8mil', role: 'viewer' }];
    expect((await as('erin-token', 'ses_1')).stdout).toContain('user:ev\\x1b[8mil  viewer\n');
    delete session.access;
    expect((await as('erin-token', 'ses_1')).stdout).toBe('PRINCIPAL   ROLE\nuser:alice  admin (owner)\n');
    expect(puts).toEqual([]);
  });

  it('access --add/--remove — reads the list, edits it (a listed principal gets its new role in place) and PUTs it whole', async () => {
    const edited = await as('alice-token', 'ses_1', '--add', 'group:payments=approver', '--add', 'group:oncall=approver', '--remove', 'user:erin');
    expect(edited).toEqual({
      code: EXIT.ok,
      stdout: 'PRINCIPAL       ROLE\nuser:alice      admin (owner)\ngroup:oncall    approver\ngroup:payments  approver\n',
      stderr: '',
    });
    expect(puts).toEqual([
      {
        url: '/v1/sessions/ses_1/access',
        authorization: 'Bearer alice-token',
        body: {
          access: [
            { principal: 'group:oncall', role: 'approver' },
            { principal: 'group:payments', role: 'approver' },
          ],
        },
      },
    ]);
    // What is asked is already so: nothing is written.
    expect(await as('alice-token', 'ses_1', '--add', 'group:payments=approver')).toMatchObject({
      code: EXIT.ok,
      stderr: '(no change: the list already reads so)\n',
    });
    expect(puts).toHaveLength(1);
  });

  it("access --add — someone whose role does not allow it: the gateway's 403, exit 1, the list as it was", async () => {
    expect(await as('erin-token', 'ses_1', '--add', 'user:frank=viewer')).toEqual({
      code: EXIT.failed,
      stdout: '',
      stderr: 'error: you are an operator of session ses_1; this needs an admin (docs/teams.md) (role_required)\n',
    });
    expect(puts).toHaveLength(1);
    expect(session.access).toEqual(initial);
    expect(await as('alice-token', 'ses_missing', '--remove', 'user:erin')).toEqual({
      code: EXIT.failed,
      stdout: '',
      stderr: 'error: session ses_missing does not exist (session_not_found)\n',
    });
  });

  it('access — an unknown role, a principal of no kind, or a wrong command line: exit 2 before asking the gateway', async () => {
    const usage = async (argv: string[], stderr: string) =>
      expect(await as('alice-token', ...argv), argv.join(' ')).toEqual({ code: EXIT.usage, stdout: '', stderr: `error: ${stderr}\n` });
    await usage(['ses_1', '--add', 'group:payments=owner'], '--add group:payments=owner: the role "owner" is none of viewer, approver, operator, admin');
    await usage(['ses_1', '--add', 'group:payments'], '--add takes <principal>=<role> (e.g. group:payments=approver), got "group:payments"');
    await usage(['ses_1', '--add', 'erin=viewer'], '--add names user:<sub> or group:<name>, got "erin"');
    await usage(['ses_1', '--remove', 'erin'], '--remove names user:<sub> or group:<name>, got "erin"');
    await usage([], 'svc access needs a session id (svc sessions list shows them)');
    await usage(['ses_1', 'user:erin'], 'svc access takes one session id; edit with --add and --remove');
    await usage(['ses_1', '--add', 'user:erin=viewer', '--remove', 'user:erin'], 'user:erin is both added and removed');
    expect(puts).toEqual([]);
  });

  it('access --remove — a principal not on the list: exit 1, nothing written', async () => {
    expect(await as('alice-token', 'ses_1', '--remove', 'user:frank')).toEqual({
      code: EXIT.failed,
      stdout: '',
      stderr: "error: user:frank is not on ses_1's access list; nothing was changed\n",
    });
    expect(puts).toEqual([]);
  });

  it('access — the edit keeps the order of the list, a new entry last; each principal named once', () => {
    expect(editedAccess(initial, editsOf(['user:erin=admin', 'user:gus=viewer'], []), 'ses_1')).toEqual([
      { principal: 'user:erin', role: 'admin' },
      { principal: 'group:oncall', role: 'viewer' },
      { principal: 'user:gus', role: 'viewer' },
    ]);
    expect(() => editsOf(['user:gus=viewer', 'user:gus=admin'], [])).toThrow('--add names user:gus twice');
    // A principal may hold "=": the role is what follows the last one.
    expect(editsOf(['user:a=b=viewer'], []).added).toEqual([{ principal: 'user:a=b', role: 'viewer' }]);
  });
});
