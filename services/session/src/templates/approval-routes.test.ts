import { describe, expect, it } from 'vitest';
import { templateRefusal } from '../../test/template-refusal.js';
import { parseGroupMembers, type GroupMembers } from './approval-routes.js';
import { parseTemplate } from './template.js';

const base = `
[agent]
command = "claude"
[sidecar]
adapter = "claude-code"
auto_approve = ["Read", "Bash(npm test*)"]
deny = ["Bash(rm -rf /*)"]
decision_timeout_s = 600
`;
const parse = (text: string, groups: GroupMembers = new Map()) => parseTemplate('team', `${text}\n${base}`, 'templates/team.toml', groups);
const refusal = (text: string, groups?: GroupMembers) => templateRefusal(`${text}\n${base}`, groups);

describe("a template's access list and approval routes (docs/teams.md)", () => {
  it('reads the access list and the routes', () => {
    const template = parse(`
access = [{ principal = "group:payments", role = "approver" }, { principal = "user:erin", role = "operator" }]
[[approvals.route]]
match = "Bash(git push*)"
to = ["group:release"]
escalate_after_s = 120
escalate_to = ["group:oncall"]
quorum = 2
`);
    expect(template.access).toEqual([
      { principal: 'group:payments', role: 'approver' },
      { principal: 'user:erin', role: 'operator' },
    ]);
    expect(template.approvals.route).toEqual([
      { match: 'Bash(git push*)', to: ['group:release'], escalate_after_s: 120, escalate_to: ['group:oncall'], quorum: 2 },
    ]);
    expect(parse('').approvals.route).toEqual([]);
  });

  it('an unknown role, a principal that is neither user: nor group:, an empty route: refused by the schema, naming the field', () => {
    expect(refusal('access = [{ principal = "group:payments", role = "boss" }]')).toMatchObject({
      code: 'invalid_template',
      message: expect.stringContaining('/access/0/role'),
    });
    expect(refusal('access = [{ principal = "payments", role = "viewer" }]').message).toContain('/access/0/principal');
    expect(refusal('[[approvals.route]]\nmatch = "Bash"\nto = []\n').message).toContain('/approvals/route/0/to');
  });

  it('a route that matches nothing: shadowed by an earlier route, the deny list or the auto_approve list', () => {
    const shadowed = refusal(
      '[[approvals.route]]\nmatch = "Bash(git *)"\nto = ["group:a"]\n[[approvals.route]]\nmatch = "Bash(git push*)"\nto = ["group:b"]\n',
    );
    expect(shadowed.message).toContain(
      '/approvals/route/1/match (the rule "Bash(git push*)") matches nothing: every request it would match is taken first by "Bash(git *)"',
    );
    expect(refusal('[[approvals.route]]\nmatch = "Read(/etc/*)"\nto = ["group:a"]\n').message).toContain('taken first by "Read"');
    expect(refusal('[[approvals.route]]\nmatch = "Bash(npm test -- --watch)"\nto = ["group:a"]\n').message).toContain('taken first by "Bash(npm test*)"');
    expect(refusal('[[approvals.route]]\nmatch = "Bash(rm -rf /tmp)"\nto = ["group:a"]\n').message).toContain('taken first by "Bash(rm -rf /*)"');
    // Narrower first, wider after: both can match.
    expect(
      parse('[[approvals.route]]\nmatch = "Bash(git push*)"\nto = ["group:b"]\n[[approvals.route]]\nmatch = "Bash(git *)"\nto = ["group:a"]\n').approvals.route,
    ).toHaveLength(2);
  });

  it('an escalation without its other half, or not before the deadline', () => {
    expect(refusal('[[approvals.route]]\nmatch = "Bash(deploy*)"\nto = ["group:a"]\nescalate_after_s = 5\n').message).toContain(
      '/approvals/route/0/escalate_after_s escalate_after_s and escalate_to go together',
    );
    expect(refusal('[[approvals.route]]\nmatch = "Bash(deploy*)"\nto = ["group:a"]\nescalate_to = ["group:b"]\n').message).toContain(
      '/approvals/route/0/escalate_to',
    );
    expect(refusal('[[approvals.route]]\nmatch = "Bash(deploy*)"\nto = ["group:a"]\nescalate_after_s = 600\nescalate_to = ["group:b"]\n').message).toContain(
      'is 600 s, not before the decision deadline (600 s)',
    );
  });

  it('a quorum larger than the people the route can reach: users count one each, a group its listed members; an unlisted group is not counted against it', () => {
    expect(refusal('[[approvals.route]]\nmatch = "Bash(rm *)"\nto = ["user:bob"]\nquorum = 2\n').message).toContain(
      '/approvals/route/0/quorum is 2, more than the 1 people',
    );
    const groups = parseGroupMembers('{"release": ["bob", "erin"], "oncall": ["dave", "bob"]}');
    expect(refusal('[[approvals.route]]\nmatch = "Bash(rm *)"\nto = ["group:release"]\nquorum = 3\n', groups).message).toContain(
      'is 3, more than the 2 people',
    );
    expect(parse('[[approvals.route]]\nmatch = "Bash(rm *)"\nto = ["group:release", "group:oncall"]\nquorum = 3\n', groups).approvals.route[0]!.quorum).toBe(3);
    expect(parse('[[approvals.route]]\nmatch = "Bash(rm *)"\nto = ["group:unlisted"]\nquorum = 5\n').approvals.route[0]!.quorum).toBe(5);
  });

  it('SVC_GROUP_MEMBERS: a malformed value is refused, naming the variable', () => {
    expect(() => parseGroupMembers('release')).toThrow(/SVC_GROUP_MEMBERS must be a JSON object/);
    expect(() => parseGroupMembers('{"release": "bob"}')).toThrow(/the members of release must be a list/);
    expect(parseGroupMembers(undefined).size).toBe(0);
  });
});
