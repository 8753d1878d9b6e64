import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditRecord, type CreateWorkerResultType, type IncomingEvent, type ListResponseOf } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { controlClient } from './sidecar-process.js';
import { bashRequest, postAsWorker } from './worker-events.js';
import { startStack, type E2eStack } from './stack.js';
import { SVC } from './svc-binary.js';

const run = promisify(execFile);

describe('the audit trail: every decision once with its channel, sessions, rules; admins only; `svc audit verify` finds an edited record', () => {
  let stack: E2eStack;
  let adminToken: string;
  let userToken: string;
  beforeAll(async () => {
    stack = await startStack();
    [adminToken, userToken] = await Promise.all([stack.userToken('ops', { svc_admin: true }), stack.userToken('auditor-user')]);
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
  }, 60_000);

  const post = async (worker: CreateWorkerResultType, events: Array<Omit<IncomingEvent, 'ts'>>) =>
    expect(await postAsWorker(stack.gatewayUrl, worker, events)).toBe(202);
  const decide = (workerId: string, body: Record<string, unknown>, channel?: string) =>
    fetch(`${stack.gatewayUrl}/v1/workers/${workerId}/control`, {
      method: 'POST',
      headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json', ...(channel ? { 'x-svc-channel': channel } : {}) },
      body: JSON.stringify(body),
    });
  const audit = async (query = '', token = adminToken) => fetch(`${stack.gatewayUrl}/v1/audit${query}`, { headers: { authorization: `Bearer ${token}` } });
  const svc = (...args: string[]) =>
    run(process.execPath, [SVC, ...args], { env: { ...process.env, SVC_URL: stack.gatewayUrl, SVC_TOKEN: adminToken }, encoding: 'utf8' }).then(
      (done) => ({ code: 0, stdout: done.stdout }),
      (failed: { code: number; stdout: string }) => ({ code: failed.code, stdout: failed.stdout }),
    );

  it('records each decision once with its channel (API, CLI, policy, timeout), the rule an "always" added, sessions started and stopped; verify passes, then names an edited record', async () => {
    const api = controlClient(stack.gatewayUrl, userToken);
    const worker = await stack.createWorker('auditor-user');
    const hurried = await stack.createWorker('auditor-user', { decision_policy: { decision_timeout_s: 1, on_timeout: 'deny' } });
    await post(worker, [
      bashRequest('by-api', 'npm test'),
      bashRequest('by-cli', 'make lint'),
      bashRequest('by-policy', 'ls'),
      {
        type: 'control_response',
        uid: 'policy-decision',
        data: { request_id: 'by-policy', decision: 'allow', decided_by: 'policy', message: 'auto-approved' },
      },
    ]);
    await post(hurried, [bashRequest('by-deadline', 'rm -rf build')]);
    await waitFor('the two open requests', async () => (await api.openRequests(worker.worker_id)).length === 2);
    expect((await decide(worker.worker_id, { request_id: 'by-api', decision: 'allow' })).status).toBe(201);
    expect((await decide(worker.worker_id, { request_id: 'by-cli', decision: 'allow', scope: 'always', input_pattern: 'make *' }, 'cli')).status).toBe(201);
    // A second decision of the same request is refused, and recorded nowhere.
    expect((await decide(worker.worker_id, { request_id: 'by-api', decision: 'deny' })).status).toBe(409);
    const session = await api.createSession({ template: 'demo' });
    const stopped = await fetch(`${stack.gatewayUrl}/v1/sessions/${session.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${userToken}` } });
    expect(stopped.status).toBe(200);

    const records = await waitFor(
      'every fact in the audit trail',
      async () => {
        const page = (await (await audit('?limit=1000')).json()) as ListResponseOf<AuditRecord>;
        return page.items.length >= 7 ? page.items : undefined;
      },
      20_000,
      200,
    );
    const decisions = records.filter((r) => r.action === 'decision');
    expect(decisions.map((r) => [r.request_id, r.channel, r.actor, r.decision]).sort()).toEqual(
      [
        ['by-api', 'api', 'auditor-user', 'allow'],
        ['by-cli', 'cli', 'auditor-user', 'allow'],
        ['by-deadline', 'timeout', 'policy:timeout', 'deny'],
        ['by-policy', 'policy', 'policy', 'allow'],
      ].sort(),
    );
    // Exactly which action: the hash of the request's tool and input.
    expect(new Set(decisions.map((r) => r.action_hash)).size).toBe(4);
    expect(records.filter((r) => r.action === 'rule_added')).toMatchObject([
      { request_id: 'by-cli', channel: 'cli', details: { tool_name: 'Bash', input_pattern: 'make *' } },
    ]);
    expect(records.filter((r) => r.session_id === session.id).map((r) => [r.action, r.actor, r.channel])).toEqual([
      ['session_started', 'auditor-user', 'api'],
      ['session_stopped', 'auditor-user', 'api'],
    ]);
    expect(records).toHaveLength(7);
    // Every record is keyed (HMAC, with the control service's key): a client cannot recompute them, control verifies.

    // Filtered, exported as JSON lines, and for admins only.
    const byCli = (await (await audit('?channel=cli')).json()) as ListResponseOf<AuditRecord>;
    expect(byCli.items.map((r) => r.action).sort()).toEqual(['decision', 'rule_added']);
    const exported = await audit('?format=jsonl&limit=1000');
    expect(exported.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(
      (await exported.text())
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as AuditRecord).seq),
    ).toEqual(records.map((r) => r.seq));
    const refused = await audit('', userToken);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('forbidden');

    const intact = await svc('audit', 'verify');
    expect(intact.code).toBe(0);
    expect(intact.stdout).toMatch(/^the audit trail is intact: 7 records, every hash checked\n {2}every record is sealed with the audit key \(HMAC\)\n/);
    // Someone with the database's password turns the deadline's deny into an allow.
    const edited = records.find((r) => r.request_id === 'by-deadline')!;
    const client = new pg.Client({ connectionString: stack.postgres.url });
    await client.connect();
    try {
      await client.query(`UPDATE audit_records SET decision = 'allow' WHERE seq = $1`, [edited.seq]);
    } finally {
      await client.end();
    }
    expect(await svc('audit', 'verify')).toEqual({
      code: 1,
      stdout: `the audit trail was tampered with: record #${edited.seq} was changed after it was written: its HMAC does not match its content\n`,
    });
  }, 90_000);
});
