import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ListResponseOf, PolicyReplay, PolicySuggestion } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

/**
 * A decision log the test makes, 200 requests of the `shop` template's sessions: `npm test`
 * allowed by people 40 times; `curl …` denied 9 times of 10; `git status`/`git diff`/`git log`
 * allowed 30 times between them; `rm -rf …` denied 5 times and allowed 5; 60 `ls` never decided
 * by a person (the worker's own lists: source worker:policy); 55 `make build` allowed and 0 denied
 * but on a worker of another template.
 */
function plan(): Array<{ worker: 'a' | 'b' | 'other'; command: string; decision: 'allow' | 'deny' | 'policy' }> {
  const rows: Array<{ worker: 'a' | 'b' | 'other'; command: string; decision: 'allow' | 'deny' | 'policy' }> = [];
  for (let n = 0; n < 40; n++) rows.push({ worker: n % 2 ? 'a' : 'b', command: 'npm test', decision: 'allow' });
  for (let n = 0; n < 10; n++) rows.push({ worker: 'a', command: `curl https://site${n}.example`, decision: n === 0 ? 'allow' : 'deny' });
  for (let n = 0; n < 30; n++) rows.push({ worker: 'b', command: ['git status', 'git diff', 'git log'][n % 3]!, decision: 'allow' });
  for (let n = 0; n < 10; n++) rows.push({ worker: 'a', command: `rm -rf dir${n}`, decision: n % 2 ? 'allow' : 'deny' });
  for (let n = 0; n < 55; n++) rows.push({ worker: 'b', command: 'ls', decision: 'policy' });
  for (let n = 0; n < 55; n++) rows.push({ worker: 'other', command: 'make build', decision: 'allow' });
  return rows;
}

describe('the policy learned from the decision log: suggestions and replay (docs/policy.md; real NATS, Postgres and services)', () => {
  let gw: GatewayFixture;
  const rows = plan();
  const workers = { a: 'wrk_shop_a', b: 'wrk_shop_b', other: 'wrk_other' } as const;
  let alice: string;

  beforeAll(async () => {
    gw = await startGatewayFixture({}, [], { services: true, postgres: true });
    alice = await gw.userToken('alice');
    const tokens = {
      a: await gw.createWorker(workers.a, 'alice', 'running', { template: 'shop' }),
      b: await gw.createWorker(workers.b, 'alice', 'running', { template: 'shop' }),
      other: await gw.createWorker(workers.other, 'alice', 'running', { template: 'other' }),
    };
    // Each request, and the worker's own answer where its lists decided (as its sidecar posts them).
    for (const key of ['a', 'b', 'other'] as const) {
      const events = rows.flatMap((row, index) => {
        if (row.worker !== key) return [];
        const requestId = `p-${index}`;
        const ts = new Date(Date.UTC(2026, 10, 27, 10, 0, index)).toISOString();
        return [
          { type: 'control_request', uid: `cr-${requestId}`, ts, data: { request_id: requestId, tool_name: 'Bash', input: { command: row.command } } },
          ...(row.decision === 'policy'
            ? [
                {
                  type: 'control_response',
                  uid: `cresp:${requestId}`,
                  ts,
                  data: { request_id: requestId, decision: 'allow', decided_by: 'policy', message: 'auto-approved by the rule Bash(ls)' },
                },
              ]
            : []),
        ];
      });
      const posted = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${workers[key]}/sdk-events`,
        headers: { authorization: `Bearer ${tokens[key]}` },
        payload: { events },
      });
      expect(posted.statusCode).toBe(202);
    }
    await waitFor(
      'the requests stored',
      async () => {
        const open = await Promise.all(
          Object.values(workers).map(async (id) =>
            (await gw.app.inject({ url: `/v1/workers/${id}/control/requests?state=open`, headers: { authorization: `Bearer ${alice}` } })).json(),
          ),
        );
        return open.reduce((sum, list: ListResponseOf<unknown>) => sum + list.total, 0) === rows.filter((row) => row.decision !== 'policy').length;
      },
      30_000,
      200,
    );
    // People decide the rest.
    for (const [index, row] of rows.entries()) {
      if (row.decision === 'policy') continue;
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${workers[row.worker]}/control`,
        headers: { authorization: `Bearer ${alice}` },
        payload: { request_id: `p-${index}`, decision: row.decision },
      });
      expect(answer.statusCode).toBe(201);
    }
  }, 180_000);
  afterAll(() => gw?.stop());

  it('suggestions: npm test to auto-approve (40 allowed), curl to deny (9 of 10), the git family to auto-approve (30 over 3 commands); nothing from rm (split), ls (no person decided) or another template', async () => {
    const answer = await gw.app.inject({ url: '/v1/policy/suggestions?template=shop', headers: { authorization: `Bearer ${alice}` } });
    expect(answer.statusCode).toBe(200);
    const items = (answer.json() as ListResponseOf<PolicySuggestion>).items;
    expect(items.map((item) => [item.rule, item.list, item.evidence.allowed, item.evidence.denied, item.evidence.distinct_inputs])).toEqual([
      ['Bash(npm test)', 'auto_approve', 40, 0, 1],
      ['Bash(git *)', 'auto_approve', 30, 0, 3],
      ['Bash(curl *)', 'deny', 1, 9, 10],
    ]);
    expect(items[0]).toMatchObject({
      evidence: { requests: 40, deciders: ['alice'], examples: ['npm test'] },
      why: 'allowed by people 40 times, never denied',
    });
    expect(items[2]!.why).toBe('denied by people 9 of 10 times');
    // Nobody else sees alice's log: bob's suggestions are empty.
    const bob = await gw.app.inject({ url: '/v1/policy/suggestions?template=shop', headers: { authorization: `Bearer ${await gw.userToken('bob')}` } });
    expect((bob.json() as ListResponseOf<PolicySuggestion>).items).toEqual([]);
    expect((await gw.app.inject({ url: '/v1/policy/suggestions', headers: { authorization: `Bearer ${alice}` } })).statusCode).toBe(400);
  });

  it("replay: a candidate over the last 200 requests; its counts match the test's own reckoning of each request", async () => {
    const policy = { auto_approve: ['Bash(npm test)', 'Bash(git *)', 'Bash(ls)'], deny: ['Bash(curl *)'], ask: ['Bash(rm *)'] };
    const answer = await gw.app.inject({
      method: 'POST',
      url: '/v1/policy/replay',
      headers: { authorization: `Bearer ${alice}` },
      payload: { template: 'shop', policy, last: 200 },
    });
    expect(answer.statusCode).toBe(200);
    const replayed = answer.json() as PolicyReplay;
    // The test's own reckoning: what the candidate answers for each command, beside what was done.
    const candidate = (command: string) =>
      command.startsWith('curl ')
        ? 'deny'
        : command.startsWith('rm ')
          ? 'ask'
          : ['npm test', 'ls'].includes(command) || command.startsWith('git ')
            ? 'allow'
            : 'ask';
    const shop = rows.filter((row) => row.worker !== 'other');
    const byPeople = shop.filter((row) => row.decision !== 'policy');
    expect(replayed.counts).toEqual({
      requests: shop.length,
      decided_by_people: byPeople.length,
      agreements: byPeople.filter((row) => candidate(row.command) === row.decision).length,
      let_through_denied: byPeople.filter((row) => candidate(row.command) === 'allow' && row.decision === 'deny').length,
      blocked_allowed: byPeople.filter((row) => candidate(row.command) === 'deny' && row.decision === 'allow').length,
      questions_spared: byPeople.filter((row) => candidate(row.command) !== 'ask').length,
      still_asked: shop.filter((row) => candidate(row.command) === 'ask').length,
    });
    expect(replayed.counts).toMatchObject({ requests: 145, decided_by_people: 90, agreements: 79, blocked_allowed: 1, questions_spared: 80, still_asked: 10 });
    const curl = replayed.items.find((item) => (item.input as { command: string }).command === 'curl https://site0.example');
    expect(curl).toMatchObject({ policy: { decision: 'deny', reason: 'denied by the rule Bash(curl *)' }, people: { outcome: 'allow', decided_by: 'alice' } });
    const ls = replayed.items.find((item) => (item.input as { command: string }).command === 'ls');
    expect(ls?.people).toEqual({ outcome: 'policy_allow', decided_by: 'policy' });
    // A person's rule in the candidate comes before its lists, as on a worker.
    const withRule = await gw.app.inject({
      method: 'POST',
      url: '/v1/policy/replay',
      headers: { authorization: `Bearer ${alice}` },
      payload: { template: 'shop', policy: { ...policy, rules: [{ tool_name: 'Bash', input_pattern: 'rm -rf dir*', decision: 'allow' }] }, last: 200 },
    });
    expect((withRule.json() as PolicyReplay).counts).toMatchObject({ still_asked: 0, let_through_denied: 5 });
    // Every candidate rule is matched against every request: one over a rule's caps is refused.
    const overCap = await gw.app.inject({
      method: 'POST',
      url: '/v1/policy/replay',
      headers: { authorization: `Bearer ${alice}` },
      payload: { template: 'shop', policy: { auto_approve: [`Bash(${'*a'.repeat(70)})`] } },
    });
    expect(overCap.statusCode).toBe(400);
    expect(overCap.json().message).toContain('/body/policy/auto_approve/0');
  });
});
