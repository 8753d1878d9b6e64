import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessEntry, ApprovalItem, ListResponseOf, PermissionRule, StoredEvent } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

/** alice's worker, shared: `payments` approves, erin operates, `auditors` watch. */
const ACCESS: AccessEntry[] = [
  { principal: 'group:payments', role: 'approver' },
  { principal: 'user:erin', role: 'operator' },
  { principal: 'group:auditors', role: 'viewer' },
];

/** A worker and the people of a test: their requests to the gateway, and the sidecar's. */
interface Team {
  gw: GatewayFixture;
  workerId: string;
  workerToken: string;
  tokens: Record<string, string>;
}

function teamClient(team: () => Team) {
  const as = (person: string) => ({ authorization: `Bearer ${team().tokens[person]}` });
  const get = (person: string, url: string) => team().gw.app.inject({ url, headers: as(person) });
  const post = (person: string, url: string, payload: object) => team().gw.app.inject({ method: 'POST', url, headers: as(person), payload });
  const decide = (person: string, requestId: string, decision: 'allow' | 'deny', more: object = {}) =>
    post(person, `/v1/workers/${team().workerId}/control`, { request_id: requestId, decision, ...more });
  const inboxItems = async (person: string) => ((await get(person, '/v1/approvals')).json() as ListResponseOf<ApprovalItem>).items;
  const inbox = async (person: string) => (await inboxItems(person)).map((item) => item.request.data.request_id);
  const history = async () => ((await get('alice', `/v1/workers/${team().workerId}/sdk-events?limit=1000`)).json() as ListResponseOf<StoredEvent>).items;
  const systemEvents = async (subtype: string) =>
    (await history()).filter((event): event is StoredEvent<'system'> => event.type === 'system' && event.data.subtype === subtype);
  const decisionsOf = async (requestId: string) =>
    (await history()).filter((event) => event.type === 'control_response' && (event.data as { request_id: string }).request_id === requestId);
  let asked = 0;
  /** The sidecar reports a Bash request; resolves with its id once stored. */
  async function ask(command: string, listedFor: string): Promise<string> {
    const { gw, workerId, workerToken } = team();
    const requestId = `req-${++asked}`;
    const event = {
      type: 'control_request',
      uid: `cr-${requestId}`,
      ts: new Date().toISOString(),
      data: { request_id: requestId, tool_name: 'Bash', input: { command } },
    };
    const posted = await gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${workerId}/sdk-events`,
      headers: { authorization: `Bearer ${workerToken}` },
      payload: { events: [event] },
    });
    expect(posted.statusCode).toBe(202);
    await waitFor('the request listed as open', async () => (await inbox(listedFor)).includes(requestId));
    return requestId;
  }
  return { get, post, decide, inbox, inboxItems, history, systemEvents, decisionsOf, ask };
}

describe('a shared worker: each person may do what their role allows (docs/teams.md; real NATS, Postgres and services)', () => {
  let team: Team;
  const { get, post, decide, ask } = teamClient(() => team);

  beforeAll(async () => {
    const gw = await startGatewayFixture({}, [], { services: true });
    const workerId = 'wrk_shared';
    const workerToken = await gw.createWorker(workerId, 'alice', 'running', { access: ACCESS, mode: 'conversation' });
    const tokens = {
      alice: await gw.userToken('alice', { groups: ['payments'] }),
      bob: await gw.userToken('bob', { groups: ['payments', 'release'] }),
      carol: await gw.userToken('carol'),
      erin: await gw.userToken('erin'),
      ivy: await gw.userToken('ivy', { groups: 'auditors' }),
    };
    team = { gw, workerId, workerToken, tokens };
  }, 60_000);
  afterAll(() => team?.gw.stop());

  it('everyone the list names sees the worker and its history; carol, named nowhere, gets 404 as for a worker that does not exist', async () => {
    const { workerId } = team;
    for (const person of ['alice', 'bob', 'erin', 'ivy']) {
      expect((await get(person, `/v1/workers/${workerId}`)).statusCode, person).toBe(200);
      expect((await get(person, `/v1/workers/${workerId}/sdk-events`)).statusCode, person).toBe(200);
    }
    for (const url of [`/v1/workers/${workerId}`, `/v1/workers/${workerId}/sdk-events`, `/v1/workers/${workerId}/control/requests`]) {
      const answer = await get('carol', url);
      expect(answer.statusCode, url).toBe(404);
      expect(answer.json(), url).toEqual({ code: 'worker_not_found', message: `worker ${workerId} does not exist` });
    }
    expect((await post('carol', `/v1/workers/${workerId}/messages`, { text: 'hi' })).statusCode).toBe(404);
  });

  it('a message needs an operator: erin may send one; bob (approver) and ivy (viewer) get 403 role_required naming their role and the one needed', async () => {
    const { workerId } = team;
    expect((await post('erin', `/v1/workers/${workerId}/messages`, { text: 'from erin' })).statusCode).toBe(202);
    const bob = await post('bob', `/v1/workers/${workerId}/messages`, { text: 'from bob' });
    expect(bob.statusCode).toBe(403);
    expect(bob.json()).toMatchObject({ code: 'role_required', details: { role: 'approver', needed: 'operator' } });
    expect(bob.json().message).toBe(`you are an approver of worker ${workerId}; this needs an operator (docs/teams.md)`);
    const ivy = await post('ivy', `/v1/workers/${workerId}/interrupt`, {});
    expect(ivy.statusCode).toBe(403);
    expect(ivy.json()).toMatchObject({ code: 'role_required', details: { role: 'viewer', needed: 'operator' } });
  });

  it('a decision needs an approver: bob (payments) decides; ivy (viewer) is refused by the control service with role_required', async () => {
    const first = await ask('npm test', 'bob');
    const refused = await decide('ivy', first, 'allow');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'role_required', details: { role: 'viewer', needed: 'approver' } });
    const decided = await decide('bob', first, 'allow');
    expect(decided.statusCode).toBe(201);
    expect(decided.json()).toMatchObject({ source: 'user:api:bob', data: { decision: 'allow', decided_by: 'bob' } });
  });

  it('the owner changes the list and every gateway follows: bob, taken off, gets 404', async () => {
    const { gw, workerId } = team;
    await gw.setWorker({ ...(await gw.workers.get(workerId))!, access: [{ principal: 'user:erin', role: 'operator' }] });
    await waitFor('bob no longer sees it', async () => (await get('bob', `/v1/workers/${workerId}`)).statusCode === 404);
    expect((await get('erin', `/v1/workers/${workerId}`)).statusCode).toBe(200);
  });
});

describe('routed requests: routing and escalation (docs/teams.md; real NATS, Postgres and services)', () => {
  let team: Team;
  const { decide, inbox, systemEvents, ask } = teamClient(() => team);

  beforeAll(async () => {
    team = await routedTeam({});
  }, 90_000);
  afterAll(() => team?.gw.stop());

  it("a git push goes to release only: alice (owner) gets 403 not_a_decider naming who may; it is in bob's inbox, not alice's; bob decides", async () => {
    const requestId = await ask('git push origin main', 'bob');
    expect(await inbox('alice')).not.toContain(requestId);
    const refused = await decide('alice', requestId, 'allow');
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toMatchObject({ code: 'not_a_decider', details: { deciders: ['group:release'], rule: 'Bash(git push*)' } });
    expect(refused.json().message).toContain('routed to group:release by the rule Bash(git push*)');
    // carol sees nothing of it: the worker does not exist for her.
    expect((await decide('carol', requestId, 'allow')).statusCode).toBe(404);
    expect(await inbox('carol')).toEqual([]);
    const decided = await decide('bob', requestId, 'allow');
    expect(decided.statusCode).toBe(201);
    expect(decided.json()).toMatchObject({ source: 'user:api:bob', data: { decision: 'allow' } });
  });

  it('escalation: after 2 s undecided, a deploy is offered to oncall too — stored once as a fact from svc:approvals — and dave decides', async () => {
    const requestId = await ask('deploy production', 'bob');
    expect(await inbox('dave')).not.toContain(requestId);
    expect((await decide('dave', requestId, 'allow')).json()).toMatchObject({ code: 'not_a_decider' });
    await waitFor('offered to oncall', async () => (await inbox('dave')).includes(requestId), 10_000, 100);
    const escalations = await systemEvents('request_escalated');
    expect(escalations).toHaveLength(1);
    expect(escalations[0]).toMatchObject({
      source: 'svc:approvals',
      data: { details: { request_id: requestId, to: ['group:oncall'], rule: 'Bash(deploy*)' } },
    });
    expect((await decide('dave', requestId, 'allow')).statusCode).toBe(201);
  });
});

describe('a quorum of two (docs/teams.md; real NATS, Postgres and two control replicas)', () => {
  let team: Team;
  const { decide, inboxItems, systemEvents, decisionsOf, ask } = teamClient(() => team);

  beforeAll(async () => {
    team = await routedTeam({ postgres: true, controlReplicas: 2 });
  }, 90_000);
  afterAll(() => team?.gw.stop());

  it("bob's allow is a vote (202; again, the same count) and the agent hears nothing; dave's completes it; a deny after one allow ends it denied", async () => {
    const first = await ask('rm -rf build', 'bob');
    const vote = await decide('bob', first, 'allow');
    expect(vote.statusCode).toBe(202);
    expect(vote.json()).toMatchObject({ vote: { request_id: first, voter: 'bob', decision: 'allow' }, allows: 1, quorum: 2, voters: ['bob'] });
    expect((await decide('bob', first, 'allow')).json()).toMatchObject({ allows: 1, voters: ['bob'] });
    expect(await decisionsOf(first)).toEqual([]);
    const item = (await inboxItems('dave')).find((candidate) => candidate.request.data.request_id === first);
    expect(item?.route).toMatchObject({ quorum: 2, allows: 1, voters: ['bob'] });
    const completed = await decide('dave', first, 'allow');
    expect(completed.statusCode).toBe(201);
    expect(completed.json()).toMatchObject({ source: 'user:api:dave', data: { decision: 'allow', message: 'allowed by bob and dave (a quorum of 2)' } });
    await waitFor('one decision stored', async () => (await decisionsOf(first)).length === 1);
    expect((await systemEvents('approval_vote')).map((event) => event.data.details?.['voter'])).toEqual(['bob', 'dave']);

    const second = await ask('rm -rf dist', 'bob');
    expect((await decide('bob', second, 'allow')).statusCode).toBe(202);
    const denied = await decide('dave', second, 'deny');
    expect(denied.statusCode).toBe(201);
    expect(denied.json()).toMatchObject({ data: { decision: 'deny' } });
  });

  it('what would take a request from its deciders is refused: an "always" that does not cover its own request, an input changed onto another route, a changed input on a quorum', async () => {
    const ls = await ask('ls -la', 'alice');
    const broad = await decide('alice', ls, 'allow', { scope: 'always', input_pattern: 'git push*' });
    expect(broad.statusCode).toBe(400);
    expect(broad.json().message).toContain('the rule Bash(git push*) does not cover request');
    const moved = await decide('alice', ls, 'allow', { updated_input: { command: 'git push origin main' } });
    expect(moved.statusCode).toBe(400);
    expect(moved.json().message).toContain('would be decided by the route Bash(git push*)');
    const removal = await ask('rm -rf tmp', 'bob');
    const rewritten = await decide('bob', removal, 'allow', { updated_input: { command: 'rm -rf /' } });
    expect(rewritten.statusCode).toBe(400);
    expect(rewritten.json().message).toContain('needs a quorum');
    expect((await decide('alice', ls, 'allow', { scope: 'always', input_pattern: 'ls *' })).statusCode).toBe(201);
  });

  it('two people completing the quorum at once on two control replicas: exactly one completes it, the other hears it was decided', async () => {
    const requestId = await ask('rm -rf cache', 'bob');
    expect((await decide('bob', requestId, 'allow')).statusCode).toBe(202);
    const answers = await Promise.all([decide('dave', requestId, 'allow'), decide('erin', requestId, 'allow')]);
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([201, 409]);
    expect(answers.find((answer) => answer.statusCode === 409)!.json()).toMatchObject({ code: 'already_decided' });
    await waitFor('the decision stored', async () => (await decisionsOf(requestId)).length > 0);
    expect(await decisionsOf(requestId)).toHaveLength(1);
  });
});

/** alice's worker whose template routes git pushes and deploys to release (deploys escalating to oncall after 2 s), and removals to a quorum of two. */
async function routedTeam(options: { postgres?: boolean; controlReplicas?: number }): Promise<Team> {
  const gw = await startGatewayFixture({}, [], { services: true, ...options });
  const workerId = 'wrk_routed';
  const workerToken = await gw.createWorker(workerId, 'alice', 'running', {
    access: [{ principal: 'group:payments', role: 'approver' }],
    decision_policy: { decision_timeout_s: 60, on_timeout: 'deny' },
    approvals: [
      { match: 'Bash(git push*)', to: ['group:release'] },
      { match: 'Bash(deploy*)', to: ['group:release'], escalate_after_s: 2, escalate_to: ['group:oncall'] },
      { match: 'Bash(rm *)', to: ['group:release', 'group:oncall'], quorum: 2 },
    ],
  });
  const tokens = {
    alice: await gw.userToken('alice', { groups: ['payments'] }),
    bob: await gw.userToken('bob', { groups: ['payments', 'release'] }),
    dave: await gw.userToken('dave', { groups: ['oncall'] }),
    erin: await gw.userToken('erin', { groups: ['release'] }),
    carol: await gw.userToken('carol'),
  };
  return { gw, workerId, workerToken, tokens };
}

describe('rules beyond one worker: team, template, session (docs/teams.md, "Rules")', () => {
  let team: Team;
  const { get, ask } = teamClient(() => team);
  const workerTokens: Record<string, string> = {};
  const rulesOf = async (workerId: string) =>
    (
      (
        await team.gw.app.inject({ url: `/v1/workers/${workerId}/permission-rules`, headers: { authorization: `Bearer ${workerTokens[workerId]}` } })
      ).json() as ListResponseOf<PermissionRule>
    ).items;

  beforeAll(async () => {
    const gw = await startGatewayFixture({}, [], { services: true });
    const shared = { access: [{ principal: 'group:payments', role: 'approver' as const }], template: 'shop', teams: ['payments'] };
    workerTokens['wrk_a'] = await gw.createWorker('wrk_a', 'alice', 'running', { ...shared, session_id: 'ses_a' });
    workerTokens['wrk_b'] = await gw.createWorker('wrk_b', 'alice', 'running', { ...shared, session_id: 'ses_b' });
    workerTokens['wrk_c'] = await gw.createWorker('wrk_c', 'alice', 'running', { template: 'other', session_id: 'ses_c' });
    const tokens = {
      alice: await gw.userToken('alice', { groups: ['payments'] }),
      bob: await gw.userToken('bob', { groups: ['payments', 'release'] }),
      carol: await gw.userToken('carol'),
    };
    team = { gw, workerId: 'wrk_a', workerToken: workerTokens['wrk_a']!, tokens };
  }, 60_000);
  afterAll(() => team?.gw.stop());

  const always = (person: string, requestId: string, extra: object) =>
    team.gw.app.inject({
      method: 'POST',
      url: '/v1/workers/wrk_a/control',
      headers: { authorization: `Bearer ${team.tokens[person]}` },
      payload: { request_id: requestId, decision: 'allow', scope: 'always', input_pattern: 'npm test', ...extra },
    });

  it('a team rule given by a member applies to every worker of that team (its sidecar reads it, naming the scope) and to no other; who may give which scope', async () => {
    const requestId = await ask('npm test', 'bob');
    expect((await always('bob', requestId, { rule_scope: 'team', rule_team: 'marketing' })).json()).toMatchObject({ code: 'forbidden' });
    expect((await always('bob', requestId, { rule_scope: 'template' })).json()).toMatchObject({ code: 'role_required', details: { needed: 'operator' } });
    expect((await always('bob', requestId, { rule_scope: 'team' })).json()).toMatchObject({ code: 'invalid_request' });
    const given = await always('bob', requestId, { rule_scope: 'team', rule_team: 'payments' });
    expect(given.statusCode).toBe(201);
    expect(given.json()).toMatchObject({ data: { rule_scope: 'team', rule_key: 'team:payments' } });
    const [rule] = await rulesOf('wrk_b');
    expect(rule).toMatchObject({
      tool_name: 'Bash',
      input_pattern: 'npm test',
      added_by: 'bob',
      scope: 'team',
      scope_key: 'team:payments',
      worker_id: 'wrk_a',
    });
    expect(await rulesOf('wrk_c')).toEqual([]);
    expect((await rulesOf('wrk_a')).map((found) => found.rule_id)).toEqual([rule!.rule_id]);
  });

  it('GET /v1/rules lists what each may see and searches; DELETE revokes (404 to who may not see it): the workers read it gone', async () => {
    const listed = async (person: string, query = '') =>
      ((await get(person, `/v1/rules${query}`)).json() as ListResponseOf<PermissionRule>).items.map(
        (rule) => `${rule.scope}:${rule.tool_name}(${rule.input_pattern})`,
      );
    expect(await listed('bob')).toEqual(['team:Bash(npm test)']);
    expect(await listed('bob', '?q=NPM')).toEqual(['team:Bash(npm test)']);
    expect(await listed('bob', '?scope=template')).toEqual([]);
    expect(await listed('carol')).toEqual([]);
    const [rule] = await rulesOf('wrk_b');
    const revoke = (person: string) =>
      team.gw.app.inject({ method: 'DELETE', url: `/v1/rules/${rule!.rule_id}`, headers: { authorization: `Bearer ${team.tokens[person]}` } });
    expect((await revoke('carol')).statusCode).toBe(404);
    const revoked = await revoke('alice');
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json()).toMatchObject({ revoked: true, rule: { rule_id: rule!.rule_id } });
    expect(await rulesOf('wrk_b')).toEqual([]);
    expect(await listed('bob')).toEqual([]);
    // A session rule: its session's worker gets it, the team's other workers do not.
    const requestId = await ask('npm run lint', 'bob');
    expect((await always('bob', requestId, { rule_scope: 'session', input_pattern: 'npm run *' })).statusCode).toBe(201);
    expect((await rulesOf('wrk_a')).map((found) => `${found.scope_key}:${found.input_pattern}`)).toEqual(['session:ses_a:npm run *']);
    expect(await rulesOf('wrk_b')).toEqual([]);
  });
});
