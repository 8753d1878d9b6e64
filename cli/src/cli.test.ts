import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_SIGN_IN_CODE_FILE } from '@svc/protocol';
import { freePort } from '@svc/test-support';
import { COMMANDS } from './cli.js';
import { EXIT } from './exit-codes.js';
import { resolveConnection, saveConfig } from './settings.js';
import { svc } from '../test/run-svc.js';

describe('svc: commands, help, errors and exit codes', () => {
  let dir: string;
  let gateway: Server;
  let gatewayUrl: string;
  const seen: Array<{ method: string; url: string; authorization: string | undefined }> = [];
  const sent: Array<{ url: string; body: Record<string, unknown> | undefined; channel: string | string[] | undefined }> = [];
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-'));
    process.env['SVC_CONFIG'] = path.join(dir, 'config.json');
    delete process.env['SVC_URL'];
    delete process.env['SVC_TOKEN'];
    // A stand-in of the gateway's answers (the e2e test drives the real one).
    gateway = createServer((request, response) => {
      seen.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization });
      const json = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (request.url === '/v1/workers/wrk_1/changes')
        return json(200, {
          worker_id: 'wrk_1',
          repo: 'https://git.example.com/acme/shop.git',
          base_commit: 'a'.repeat(40),
          head_commit: 'b'.repeat(40),
          branch: 'svc/ses_1',
          files: [
            { path: 'README.md', status: 'modified', additions: 2, deletions: 1 },
            { path: 'logo.png', status: 'added', additions: 0, deletions: 0, binary: true },
          ],
          files_truncated: false,
          additions: 2,
          deletions: 1,
          patch_bytes: 100,
          truncated: false,
          reported_at: '2026-11-27T10:00:00.000Z',
        });
      if (request.url?.startsWith('/v1/workers/wrk_1/changes/diff')) {
        const one = request.url.includes('path=README.md');
        response.writeHead(200, { 'content-type': 'text/x-diff', 'x-svc-patch-truncated': String(!one), 'x-svc-patch-bytes': '4096' });
        return response.end('diff --git a/README.md b/README.md\n@@ -1 +1,2 @@\n-old\n+new \x1b[8mhidden\n+more\n');
      }
      if (request.method === 'POST' && request.url === '/v1/workers/wrk_1/changes/push')
        return json(200, {
          branch: 'svc/ses_1',
          commit: 'c'.repeat(40),
          remote: 'https://git.example.com/acme/shop.git',
          by: 'me',
          at: '2026-11-27T10:00:00.000Z',
        });
      if (request.method === 'POST' && request.url === '/v1/workers/wrk_1/changes/pull-request')
        return json(200, {
          url: 'https://github.example/acme/shop/pull/7',
          number: 7,
          head: 'svc/ses_1',
          base: 'main',
          title: 't',
          by: 'me',
          at: '2026-11-27T10:00:00.000Z',
        });
      if (request.method === 'POST' && request.url === '/v1/workers/wrk_2/changes/pull-request')
        return json(409, { code: 'conflict', message: "worker wrk_2's work has not been pushed" });
      if (request.url === '/v1/sessions/ses_missing') return json(404, { code: 'session_not_found', message: 'session ses_missing does not exist' });
      if (request.url === '/v1/sessions' || request.url?.startsWith('/v1/sessions?'))
        return json(200, {
          items: [
            {
              id: 'ses_1',
              worker_id: 'wrk_1',
              template: 'demo',
              status: 'running',
              owner: 'me',
              created_at: '2026-11-22T10:00:00.000Z',
              updated_at: '2026-11-22T10:00:00.000Z',
            },
          ],
          total: 7,
        });
      if (request.url === '/v1/local/token' && request.method === 'POST') {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          // As the built-in issuer: a token for the stack's sign-in code only.
          if ((JSON.parse(body || '{}') as { code?: string }).code !== 'the-sign-in-code')
            return json(403, { code: 'forbidden', message: "local tokens are given for the stack's sign-in code" });
          json(200, { token: 'aaa.eyJzdWIiOiJsb2NhbC11c2VyIn0.ccc', token_type: 'Bearer', expires_in: 60 });
        });
        return;
      }
      if (request.method === 'POST' && (request.url === '/v1/workers/wrk_1/messages' || request.url === '/v1/workers/wrk_1/interrupt')) {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          sent.push({ url: request.url!, body: body ? (JSON.parse(body) as Record<string, unknown>) : undefined, channel: request.headers['x-svc-channel'] });
          if (request.url?.endsWith('/interrupt')) return json(202, { interrupt_id: 'int_1', worker_id: 'wrk_1' });
          // As the gateway: more images than a message holds is 413.
          const images = (JSON.parse(body) as { images?: unknown[] }).images ?? [];
          if (images.length > 4)
            return json(413, { code: 'payload_too_large', message: `/body/images has ${images.length} images; a message holds at most 4` });
          json(202, { message_id: 'msg_1', worker_id: 'wrk_1' });
        });
        return;
      }
      return json(404, { code: 'not_found', message: 'no such route' });
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    delete process.env['SVC_CONFIG'];
    await new Promise((resolve) => gateway.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('--help on every command, with examples; no command prints the overview and exits 2', async () => {
    for (const command of COMMANDS) {
      const help = await svc(command.name, '--help');
      expect(help.code, command.name).toBe(EXIT.ok);
      expect(help.stdout).toContain(`svc ${command.name}`);
      expect(help.stdout).toContain('Examples');
    }
    const overview = await svc();
    expect(overview.code).toBe(EXIT.usage);
    expect(overview.stdout).toContain('Commands');
    expect((await svc('--help')).code).toBe(EXIT.ok);
  });

  it('a wrong command line exits 2 saying what is wrong', async () => {
    expect(await svc('bogus')).toMatchObject({ code: EXIT.usage, stderr: 'error: unknown command "bogus" (svc --help lists them)\n' });
    expect(await svc('sessions', 'create')).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('needs --template') as unknown as string });
    expect(await svc('sessions', 'fly')).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('unknown action "fly"') as unknown as string });
    expect(await svc('attach')).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('needs a worker id') as unknown as string });
    expect(await svc('sessions', 'create', '--template', 'demo', '--env', 'NOEQUALS', '--url', gatewayUrl)).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('--env takes KEY=VALUE') as unknown as string,
    });
  });

  it('svc up says what to do when the local stack is not built', async () => {
    process.env['SVC_LOCAL_STACK'] = '/nonexistent/main.js';
    try {
      expect(await svc('up')).toMatchObject({
        code: EXIT.failed,
        stderr: expect.stringContaining('the local stack is not built (/nonexistent/main.js is missing)') as unknown as string,
      });
    } finally {
      delete process.env['SVC_LOCAL_STACK'];
    }
  });

  it('svc changes: the diff with what the sandbox wrote made visible, --stat, --name-only, --path; svc push and svc pr print what was made', async () => {
    const flags = ['--url', gatewayUrl, '--token', 't'];
    const [forced, plain] = [process.env['FORCE_COLOR'], process.env['NO_COLOR']];
    process.env['FORCE_COLOR'] = '1';
    delete process.env['NO_COLOR'];
    const coloured = await svc('changes', 'wrk_1', ...flags);
    expect(coloured.stdout).toContain('\x1b[32m+new \\x1b[8mhidden\x1b[0m');
    process.env['NO_COLOR'] = '1';
    const diff = await svc('changes', 'wrk_1', ...flags);
    for (const [name, value] of [
      ['FORCE_COLOR', forced],
      ['NO_COLOR', plain],
    ] as const)
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    expect(diff).toMatchObject({ code: 0, stdout: 'diff --git a/README.md b/README.md\n@@ -1 +1,2 @@\n-old\n+new \\x1b[8mhidden\n+more\n' });
    expect(diff.stderr).toBe('(the stored diff is cut short: the whole one is 4096 bytes)\n');
    expect((await svc('changes', 'wrk_1', '--path', 'README.md', ...flags)).stderr).toBe('');
    expect(seen.at(-1)?.url).toBe('/v1/workers/wrk_1/changes/diff?path=README.md');
    expect((await svc('changes', 'wrk_1', '--stat', ...flags)).stdout).toBe(
      ' README.md | +2 -1 modified\n logo.png  | binary added\n 2 file(s) changed, +2 -1\n',
    );
    expect((await svc('changes', 'wrk_1', '--name-only', ...flags)).stdout).toBe('README.md\nlogo.png\n');
    expect(await svc('push', 'wrk_1', '--message', 'done', ...flags)).toMatchObject({
      code: 0,
      stdout: `pushed svc/ses_1 (${'c'.repeat(12)}) to https://git.example.com/acme/shop.git\n`,
    });
    expect(await svc('pr', 'wrk_1', '--title', 'The work', ...flags)).toMatchObject({ code: 0, stdout: 'https://github.example/acme/shop/pull/7\n' });
    expect(await svc('pr', 'wrk_1', ...flags)).toMatchObject({ code: EXIT.usage, stderr: 'error: svc pr needs --title\n' });
    expect(await svc('pr', 'wrk_2', '--title', 'x', ...flags)).toMatchObject({
      code: EXIT.failed,
      stderr: "error: worker wrk_2's work has not been pushed (conflict)\n",
    });
  });

  it('API errors print as "error: <message> (<code>)" and exit 1; an unreachable gateway says so', async () => {
    expect(await svc('sessions', 'get', 'ses_missing', '--url', gatewayUrl, '--token', 't')).toEqual({
      code: EXIT.failed,
      stdout: '',
      stderr: 'error: session ses_missing does not exist (session_not_found)\n',
    });
    const closed = await freePort();
    const unreachable = await svc('status', '--url', `http://127.0.0.1:${closed}`);
    expect(unreachable.code).toBe(EXIT.failed);
    expect(unreachable.stderr).toBe(
      `error: cannot reach the gateway at http://127.0.0.1:${closed} (ECONNREFUSED); is it running? (\`svc up\` starts a local one)\n`,
    );
  });

  it("svc send and svc interrupt: a message (with its own id, an image attached) and an interrupt, said in a line or as JSON; the gateway's refusal exits 1; a missing worker or a file that is no image exits 2", async () => {
    const connection = ['--url', gatewayUrl, '--token', 't'];
    expect(await svc('send', 'wrk_1', 'run', 'the', 'tests', '--id', 'c-1', ...connection)).toEqual({
      code: EXIT.ok,
      stdout: 'sent msg_1 to wrk_1\n',
      stderr: '',
    });
    expect(sent.at(-1)).toEqual({ url: '/v1/workers/wrk_1/messages', body: { text: 'run the tests', client_message_id: 'c-1' }, channel: 'cli' });
    expect(JSON.parse((await svc('interrupt', 'wrk_1', '--json', ...connection)).stdout)).toEqual({ interrupt_id: 'int_1', worker_id: 'wrk_1' });
    expect(sent.at(-1)).toMatchObject({ url: '/v1/workers/wrk_1/interrupt', channel: 'cli' });
    const png = path.join(dir, 'shot.png');
    await writeFile(png, Buffer.from('89504e470d0a1a0a', 'hex'));
    expect(await svc('send', 'wrk_1', 'look', '--image', png, ...connection)).toEqual({ code: EXIT.ok, stdout: 'sent msg_1 to wrk_1\n', stderr: '' });
    expect(sent.at(-1)!.body).toEqual({ text: 'look', images: [{ media_type: 'image/png', data: 'iVBORw0KGgo=' }] });
    expect(await svc('send', 'wrk_1', 'look', ...Array.from({ length: 5 }, () => ['--image', png]).flat(), ...connection)).toEqual({
      code: EXIT.failed,
      stdout: '',
      stderr: 'error: /body/images has 5 images; a message holds at most 4 (payload_too_large)\n',
    });
    expect(await svc('send')).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('needs a worker id') as unknown as string });
    expect(await svc('interrupt')).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining('needs a worker id') as unknown as string });
    expect(await svc('send', 'wrk_1', 'x', '--image', path.join(dir, 'notes.txt'), ...connection)).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining('--image takes a PNG, JPEG, GIF or WebP file') as unknown as string,
    });
  });

  it("--json prints the API's answer; otherwise a table", async () => {
    const json = await svc('sessions', 'list', '--json', '--url', gatewayUrl, '--token', 't');
    expect(JSON.parse(json.stdout)).toMatchObject({ total: 7, items: [{ id: 'ses_1' }] });
    const table = await svc('sessions', 'list', '--url', gatewayUrl, '--token', 't', '--status', 'running', '--limit', '5');
    expect(table.stdout.split('\n')[0]).toMatch(/^SESSION\s+WORKER\s+TEMPLATE\s+STATUS/);
    expect(table.stdout).toContain('1 of 7');
    expect(seen.at(-1)).toMatchObject({ url: '/v1/sessions?status=running&limit=5', authorization: 'Bearer t' });
  });

  it('settings come from flags, then SVC_URL/SVC_TOKEN, then the saved config; login saves a token readable by its owner only', async () => {
    await saveConfig({ url: 'http://saved:1', token: 'saved-token' });
    expect(await resolveConnection({})).toEqual({ url: 'http://saved:1', token: 'saved-token' });
    process.env['SVC_URL'] = 'http://from-env:2';
    process.env['SVC_TOKEN'] = 'env-token';
    try {
      expect(await resolveConnection({})).toEqual({ url: 'http://from-env:2', token: 'env-token' });
      expect(await resolveConnection({ url: 'http://flag:3/', token: 'flag-token' })).toEqual({ url: 'http://flag:3', token: 'flag-token' });
    } finally {
      delete process.env['SVC_URL'];
      delete process.env['SVC_TOKEN'];
    }
    await expect(resolveConnection({ url: 'ftp://x' })).rejects.toThrow(/must start with http/);

    // The sign-in code is read from the local stack's state directory, or given.
    const stateDir = path.join(dir, 'state');
    process.env['SVC_STATE_DIR'] = stateDir;
    try {
      const noCode = await svc('login', '--url', gatewayUrl);
      expect(noCode).toMatchObject({ code: EXIT.usage });
      expect(noCode.stderr).toContain(`${path.join(stateDir, LOCAL_SIGN_IN_CODE_FILE)} cannot be read`);
      const wrongCode = await svc('login', '--url', gatewayUrl, '--code', 'guessed');
      expect(wrongCode.code).not.toBe(EXIT.ok);
      expect(wrongCode.stderr).toContain('refused the sign-in code');
      await mkdir(stateDir, { recursive: true });
      await writeFile(path.join(stateDir, LOCAL_SIGN_IN_CODE_FILE), 'the-sign-in-code\n', { mode: 0o600 });
    } finally {
      delete process.env['SVC_STATE_DIR'];
    }
    expect((await svc('login', '--url', gatewayUrl, '--code', 'the-sign-in-code')).code).toBe(EXIT.ok);
    process.env['SVC_STATE_DIR'] = stateDir;
    const login = await svc('login', '--url', gatewayUrl).finally(() => delete process.env['SVC_STATE_DIR']);
    expect(login).toMatchObject({ code: EXIT.ok, stdout: `logged in to ${gatewayUrl} as local-user; saved in ${process.env['SVC_CONFIG']}\n` });
    expect((await stat(process.env['SVC_CONFIG']!)).mode & 0o777).toBe(0o600);
    expect(await resolveConnection({})).toEqual({ url: gatewayUrl, token: 'aaa.eyJzdWIiOiJsb2NhbC11c2VyIn0.ccc' });
  });
});
