import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiPaths, type ApprovalItem, type AuditRecord, type ListResponseOf, type PermissionRule, type Session, type StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { claudeBinary, CLAUDE_CODE_VERSIONS, codexBinary, codexTemplate, CODEX_VERSION, sandboxEnvForAll } from '@svc/test-support/real-agents';
import { startMockAnthropic, startMockOpenAI, type MockAnthropic, type MockOpenAI } from '@svc/test-support/stand-ins';
import { startStack, type E2eStack } from '../stack.js';
import { startReceiver, type Received } from '../webhook-receiver.js';
import { SVC } from '../svc-binary.js';

const run = promisify(execFile);
const CLAUDE_VERSION = CLAUDE_CODE_VERSIONS.at(-1)!;
/** What each person's token says (their groups; ops is an admin). */
const PEOPLE: Record<string, Record<string, unknown>> = {
  alice: { groups: ['payments'] },
  bob: { groups: ['payments', 'release'] },
  dave: { groups: ['oncall'] },
  ops: { svc_admin: true },
};
/** Claude's three commands, each asked: routed to release, escalated to oncall, a quorum of two. */
const PUSH = 'git push origin HEAD:refs/heads/main';
const DEPLOY = "printf 'deployed\\n' > deployed.txt";
const REMOVE = 'rm build-output.log';

/**
 * Issue 38's acceptance with the real agents (only the models are stand-ins): real Claude Code's
 * requests routed to a group, escalated to another after 2 s (its webhook told), and held for a
 * quorum of two; a team-scoped "always" given on real Codex that answers the next session's
 * request without asking and names itself, until it is revoked; every decision, vote,
 * escalation, rule change and access change in the audit trail, which `svc audit verify` passes.
 */
describe(`teams with real agents (Claude Code ${CLAUDE_VERSION}, Codex ${CODEX_VERSION})`, () => {
  let stack: E2eStack;
  let anthropic: MockAnthropic;
  let openai: MockOpenAI;
  let templates: string;
  let receiver: { url: string; received: Received[]; server: Server };
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    anthropic = await startMockAnthropic([
      { text: 'Pushing.', tool: { name: 'Bash', input: { command: PUSH, description: 'Push' } } },
      { text: 'Deploying.', tool: { name: 'Bash', input: { command: DEPLOY, description: 'Deploy' } } },
      { text: 'Cleaning.', tool: { name: 'Bash', input: { command: REMOVE, description: 'Clean' } } },
      { text: 'Done.' },
    ]);
    const npmTest = { text: 'Running the tests.', command: { cmd: 'npm test', escalate: true, justification: 'Run the tests' } };
    openai = await startMockOpenAI([npmTest, { text: 'Done.' }, npmTest, { text: 'Done.' }, npmTest, { text: 'Done.' }]);
    receiver = await startReceiver(() => 200);
    templates = await mkdtemp(path.join(tmpdir(), 'svc-e2e-teams-'));
    const builtInClaude = await readFile(fileURLToPath(new URL('../../../../services/session/templates/claude.toml', import.meta.url)), 'utf8');
    const shared = 'access = [{ principal = "group:payments", role = "approver" }]\n';
    const routes = `
[[approvals.route]]
match = "Bash(git push*)"
to = ["group:release"]

[[approvals.route]]
match = "Bash(printf *deployed*)"
to = ["group:release"]
escalate_after_s = 2
escalate_to = ["group:oncall"]

[[approvals.route]]
match = "Bash(rm *)"
to = ["group:release", "group:oncall"]
quorum = 2
`;
    await writeFile(path.join(templates, 'claude-team.toml'), `${shared}${builtInClaude}${routes}`);
    await writeFile(path.join(templates, 'codex-team.toml'), `${shared}${codexTemplate()}`);
    stack = await startStack({
      ingestReplicas: 1,
      sessionEnv: {
        SVC_TEMPLATES_DIR: templates,
        ...sandboxEnvForAll([claudeBinary(CLAUDE_VERSION), codexBinary()]),
      },
      gatewayEnv: {
        SVC_ANTHROPIC_API_KEY: 'sk-ant-e2e-teams',
        SVC_ANTHROPIC_UPSTREAM_URL: anthropic.url,
        SVC_OPENAI_API_KEY: 'sk-proj-e2e-teams',
        SVC_OPENAI_UPSTREAM_URL: new URL(openai.url).origin,
      },
    });
    for (const [person, claims] of Object.entries(PEOPLE)) tokens[person] = await stack.userToken(person, claims);
  }, 180_000);
  afterAll(async () => {
    await Promise.all([stack?.stop(), anthropic?.stop(), openai?.stop(), new Promise((resolve) => receiver?.server.close(resolve))]);
    if (templates) await rm(templates, { recursive: true, force: true });
  });

  const api = (person: string, method: string, url: string, body?: unknown) =>
    fetch(`${stack.gatewayUrl}${url}`, {
      method,
      headers: { authorization: `Bearer ${tokens[person]}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const json = async <T>(person: string, url: string) => (await (await api(person, 'GET', url)).json()) as T;
  const history = async (workerId: string) => (await json<ListResponseOf<StoredEvent>>('alice', apiPaths.sdkEvents(workerId, { limit: 1000 }))).items;
  const decide = (person: string, workerId: string, body: Record<string, unknown>) => api(person, 'POST', apiPaths.control(workerId), body);
  /** The open request of `workerId` whose input holds `text`, once it is in `person`'s inbox. */
  const inInbox = (person: string, workerId: string, text: string) =>
    waitFor(
      `a request with ${text} in ${person}'s inbox`,
      async () =>
        (await json<ListResponseOf<ApprovalItem>>(person, apiPaths.approvals)).items.find(
          (item) => item.worker_id === workerId && JSON.stringify(item.request.data.input).includes(text),
        ),
      90_000,
      200,
    );
  const start = async (person: string, template: string, prompt: string) => {
    const answer = await api(person, 'POST', apiPaths.sessions(), { template, prompt });
    expect(answer.status).toBe(201);
    return (await answer.json()) as Session;
  };

  it("Claude's git push goes to release (alice 403 not_a_decider, bob decides); its deploy escalates to oncall after 2 s (the fact and dave's webhook), dave decides; its rm needs two: bob's vote, dave's completes it, the agent gets one decision", async () => {
    const webhook = await api('dave', 'POST', '/v1/webhooks', { url: receiver.url, kinds: ['request.escalated'] });
    expect(webhook.status).toBe(201);
    const session = await start('alice', 'claude-team', 'Push, deploy and clean up.');
    const worker = session.worker_id;

    const push = await inInbox('bob', worker, 'git push');
    expect((await json<ListResponseOf<ApprovalItem>>('alice', apiPaths.approvals)).items.map((item) => item.request.data.request_id)).not.toContain(
      push.request.data.request_id,
    );
    const refused = await decide('alice', worker, { request_id: push.request.data.request_id, decision: 'allow' });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'not_a_decider', details: { deciders: ['group:release'] } });
    expect((await decide('bob', worker, { request_id: push.request.data.request_id, decision: 'allow' })).status).toBe(201);

    const deploy = await inInbox('bob', worker, 'deployed');
    const offered = await inInbox('dave', worker, 'deployed');
    expect(offered.route).toMatchObject({ escalated: true, deciders: ['group:release', 'group:oncall'] });
    await waitFor(
      'the escalation delivered to dave',
      async () => receiver.received.some((delivery) => delivery.body.includes('request.escalated')),
      30_000,
      100,
    );
    const delivered = JSON.parse(receiver.received.find((delivery) => delivery.body.includes('request.escalated'))!.body) as { data: Record<string, unknown> };
    expect(delivered.data).toMatchObject({
      worker_id: worker,
      request_id: deploy.request.data.request_id,
      deciders: ['group:oncall'],
      rule: 'Bash(printf *deployed*)',
    });
    expect((await decide('dave', worker, { request_id: deploy.request.data.request_id, decision: 'allow' })).status).toBe(201);

    const remove = await inInbox('bob', worker, REMOVE);
    const vote = await decide('bob', worker, { request_id: remove.request.data.request_id, decision: 'allow' });
    expect(vote.status).toBe(202);
    expect(await vote.json()).toMatchObject({ allows: 1, quorum: 2, voters: ['bob'] });
    expect((await decide('dave', worker, { request_id: remove.request.data.request_id, decision: 'allow' })).status).toBe(201);
    await waitFor('the agent done', async () => (await history(worker)).some((event) => event.type === 'result'), 90_000, 200);
    const events = await history(worker);
    const decisions = events.filter((event) => event.type === 'control_response').map((event) => (event.data as { decided_by: string }).decided_by);
    expect(decisions).toEqual(['bob', 'dave', 'dave']);
    expect(events.filter((event) => event.type === 'tool_result')).toHaveLength(3);
    expect(events.filter((event) => event.type === 'system' && (event.data as { subtype?: string }).subtype === 'request_escalated')).toHaveLength(1);
    // The access list changes, audited: alice shares it with oncall as viewers too.
    const shared = await api('alice', 'PUT', apiPaths.sessionAccess(session.id), {
      access: [
        { principal: 'group:payments', role: 'approver' },
        { principal: 'group:oncall', role: 'viewer' },
      ],
    });
    expect(shared.status).toBe(200);
  }, 300_000);

  it("a team rule bob gives on real Codex answers the next session's npm test without asking, naming the rule; revoked, the next asks again", async () => {
    const first = await start('alice', 'codex-team', 'Run the tests.');
    const asked = await inInbox('bob', first.worker_id, 'npm test');
    expect(asked.request.data.tool_name).toBe('command_execution');
    const given = await decide('bob', first.worker_id, {
      request_id: asked.request.data.request_id,
      decision: 'allow',
      scope: 'always',
      input_pattern: '*npm test*',
      rule_scope: 'team',
      rule_team: 'payments',
    });
    expect(given.status).toBe(201);

    const second = await start('alice', 'codex-team', 'Run the tests again.');
    const answered = await waitFor(
      'the rule answering the second session',
      async () => (await history(second.worker_id)).find((event): event is StoredEvent<'control_response'> => event.type === 'control_response'),
      90_000,
      200,
    );
    expect(answered.source).toBe('worker:policy');
    expect(answered.data).toMatchObject({
      decision: 'allow',
      message: expect.stringMatching(/^allowed by bob's team rule command_execution\(\*npm test\*\) \(team:payments, rule \d+\)$/),
    });

    const [rule] = (await json<ListResponseOf<PermissionRule>>('bob', apiPaths.rules({ scope: 'team' }))).items;
    expect(rule).toMatchObject({ tool_name: 'command_execution', added_by: 'bob', scope_key: 'team:payments' });
    expect((await api('bob', 'DELETE', apiPaths.rule(rule!.rule_id))).status).toBe(200);
    const third = await start('alice', 'codex-team', 'And once more.');
    await inInbox('bob', third.worker_id, 'npm test');
  }, 300_000);

  it('every decision, vote, escalation, rule change and access change is in the audit trail, and `svc audit verify` passes', async () => {
    const records = (await json<ListResponseOf<AuditRecord>>('ops', apiPaths.audit({ limit: 1000 }))).items;
    const actions = new Set(records.map((record) => record.action));
    for (const action of ['decision', 'vote', 'escalated', 'rule_added', 'rule_revoked', 'access_changed', 'session_started'] as const)
      expect(actions.has(action), action).toBe(true);
    expect(records.filter((record) => record.action === 'vote').map((record) => record.actor)).toEqual(['bob', 'dave']);
    const verified = await run(process.execPath, [SVC, 'audit', 'verify'], { env: { ...process.env, SVC_URL: stack.gatewayUrl, SVC_TOKEN: tokens['ops'] } });
    expect(verified.stdout).toMatch(/^the audit trail is intact: \d+ records, every hash checked\n/);
  }, 60_000);
});
