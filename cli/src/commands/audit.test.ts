import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditHead, AuditVerification } from '@svc/protocol';
import { EXIT } from '../exit-codes.js';
import { svc } from '../../test/run-svc.js';

const head: AuditHead = { seq: 6, hash: 'a'.repeat(64), key_id: '0123456789abcdef', published_at: '2026-11-26T12:00:00.000Z', instance: 'control-1' };

describe('svc audit verify', () => {
  let dir: string;
  let gateway: Server;
  let gatewayUrl: string;
  /** What the stand-in gateway answers next: a verification, or an error status and body. */
  let answer: { status: number; body: unknown };
  const seen: Array<{ method: string; url: string; authorization: string | undefined; channel: string | undefined }> = [];
  const verify = () => svc('audit', 'verify', '--url', gatewayUrl, '--token', 'admin-token');
  const verification = (result: AuditVerification) => (answer = { status: 200, body: result });

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-audit-'));
    process.env['SVC_CONFIG'] = path.join(dir, 'config.json');
    gateway = createServer((request, response) => {
      seen.push({
        method: request.method!,
        url: request.url!,
        authorization: request.headers.authorization,
        channel: request.headers['x-svc-channel'] as string | undefined,
      });
      response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    gatewayUrl = `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    delete process.env['SVC_CONFIG'];
    await new Promise((resolve) => gateway.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('audit verify — an intact trail: exit 0, which records are keyed, which heads were found; the control service is asked through the gateway', async () => {
    verification({ ok: true, count: 8, unkeyed: 2, heads: 3, latest_head: head });
    expect(await verify()).toEqual({
      code: EXIT.ok,
      stdout: [
        'the audit trail is intact: 8 records, every hash checked',
        '  records #3-#8 are sealed with the audit key (HMAC); #1-#2, written before the trail had a key, are checked by their hash chain alone',
        '  3 published heads found in the chain, the latest #6 (published 2026-11-26T12:00:00.000Z by control-1)',
        '',
      ].join('\n'),
      stderr: '',
    });
    expect(seen.at(-1)).toEqual({ method: 'GET', url: '/v1/audit/verify', authorization: 'Bearer admin-token', channel: 'cli' });

    verification({ ok: true, count: 1, unkeyed: 0, heads: 1, latest_head: { ...head, seq: 1 } });
    expect((await verify()).stdout).toBe(
      'the audit trail is intact: 1 record, every hash checked\n  every record is sealed with the audit key (HMAC)\n  1 published head found in the chain, the latest #1 (published 2026-11-26T12:00:00.000Z by control-1)\n',
    );
    verification({ ok: true, count: 0, unkeyed: 0, heads: 0 });
    expect((await verify()).stdout).toBe('the audit trail is intact: 0 records, every hash checked\n  no record yet\n');
  });

  it('audit verify — intact but unprotected: no key, no head published yet, each said', async () => {
    verification({ ok: true, count: 4, unkeyed: 4, heads: 0 });
    expect(await verify()).toMatchObject({
      code: EXIT.ok,
      stdout: [
        'the audit trail is intact: 4 records, every hash checked',
        '  no record is keyed (SVC_AUDIT_KEY is not set): whoever holds the database password could rewrite the trail unseen',
        '  no head has been published yet: deleting the newest records could not be seen',
        '',
      ].join('\n'),
    });
  });

  it('audit verify — a record that fails, or deleted records: exit 1 naming it', async () => {
    verification({
      ok: false,
      count: 4,
      unkeyed: 0,
      heads: 1,
      latest_head: head,
      seq: 4,
      problem: 'record #4 was changed after it was written: its HMAC does not match its content',
    });
    expect(await verify()).toEqual({
      code: EXIT.failed,
      stdout: 'the audit trail was tampered with: record #4 was changed after it was written: its HMAC does not match its content\n',
      stderr: '',
    });
    verification({
      ok: false,
      count: 4,
      unkeyed: 0,
      heads: 1,
      latest_head: head,
      seq: 5,
      problem: 'the head published at 2026-11-26T12:00:00.000Z (#6) is missing: the chain ends at #4, records #5-#6 were deleted',
    });
    expect(await verify()).toMatchObject({
      code: EXIT.failed,
      stdout:
        'the audit trail was tampered with: the head published at 2026-11-26T12:00:00.000Z (#6) is missing: the chain ends at #4, records #5-#6 were deleted\n',
    });
  });

  it('audit verify — the published heads missing: exit 1, the trail cannot be checked (no record named)', async () => {
    const problem =
      "no published head: the heads stream SVC_AUDIT_HEADS is missing (deleted: the services make it at start, and only NATS's operator may delete it), so nothing outside the database says where the trail ended or where keying began; the trail cannot be checked against it";
    verification({ ok: false, count: 7, unkeyed: 7, heads: 0, problem });
    expect(await verify()).toEqual({ code: EXIT.failed, stdout: `the audit trail cannot be checked: ${problem}\n`, stderr: '' });
  });

  it('audit verify — not an admin, or the control service away: the API error, exit 1; another subcommand: usage, exit 2', async () => {
    answer = { status: 403, body: { code: 'forbidden', message: 'the audit trail is for admins' } };
    expect(await verify()).toEqual({ code: EXIT.failed, stdout: '', stderr: 'error: the audit trail is for admins (forbidden)\n' });
    answer = { status: 504, body: { code: 'timeout', message: 'no answer on svc.rpc.control.audit.verify in time' } };
    expect(await verify()).toMatchObject({ code: EXIT.failed, stderr: 'error: no answer on svc.rpc.control.audit.verify in time (timeout)\n' });
    expect(await svc('audit', 'list', '--url', gatewayUrl)).toEqual({
      code: EXIT.usage,
      stdout: '',
      stderr: 'error: svc audit list: the one subcommand is "verify" (svc audit --help)\n',
    });
  });
});
