import { describe, expect, it } from 'vitest';
import type { PermissionRule } from './control-api.js';
import { createPermissionEngine } from './permission-engine.js';
import { parseRequestRule } from './request-rules.js';

const lists = { auto_approve: ['Read', 'Bash(git *)', 'mcp__github__*'], deny: ['Bash(rm -rf *)', 'WebFetch'], ask: ['Bash(git push*)'] };
const bash = (command: string) => ({ command });

describe('permission engine — lists, patterns and precedence', () => {
  const engine = createPermissionEngine(lists, { autonomous: false });

  it('exact names, name globs and argument patterns', () => {
    expect(engine.decide('Read', { file_path: '/x' }).decision).toBe('allow');
    expect(engine.decide('mcp__github__create_issue', {}).decision).toBe('allow');
    expect(engine.decide('mcp__gitlab__create_issue', {}).decision).toBe('ask');
    expect(engine.decide('Bash', bash('git status')).decision).toBe('allow');
    expect(engine.decide('Bash', bash('npm test')).decision).toBe('ask');
  });

  it('Codex: command_execution(<command line>) and file_change(<path>) — every changed path must match to auto-approve, any denied path denies', () => {
    const codex = createPermissionEngine(
      {
        auto_approve: ['file_change(/workspace/docs/*)', 'command_execution(ls *)'],
        deny: ['command_execution(rm *)', 'file_change(/workspace/.git/*)'],
        ask: [],
      },
      { autonomous: false },
    );
    const change = (...paths: string[]) => ({ changes: paths.map((path) => ({ path, kind: { type: 'add' }, diff: 'x' })) });
    expect(codex.decide('command_execution', { command: 'rm -rf data' }).decision).toBe('deny');
    expect(codex.decide('command_execution', { command: 'ls -la' }).decision).toBe('allow');
    expect(codex.decide('file_change', change('/workspace/docs/a.md', '/workspace/docs/b.md')).decision).toBe('allow');
    expect(codex.decide('file_change', change('/workspace/docs/a.md', '/workspace/src/b.ts')).decision).toBe('ask');
    expect(codex.decide('file_change', change('/workspace/docs/a.md', '/workspace/.git/config'))).toEqual({
      decision: 'deny',
      reason: 'denied by the rule file_change(/workspace/.git/*)',
    });
    // Autonomous: deny binds; everything else is allowed.
    const auto = createPermissionEngine({ auto_approve: [], deny: ['command_execution(rm *)'], ask: [] }, { autonomous: true });
    expect(auto.decide('command_execution', { command: 'rm -rf data' }).decision).toBe('deny');
    expect(auto.decide('file_change', change('/workspace/x')).decision).toBe('allow');
  });

  it('deny beats ask beats auto_approve', () => {
    expect(engine.decide('Bash', bash('rm -rf /'))).toEqual({ decision: 'deny', reason: 'denied by the rule Bash(rm -rf *)' });
    // git push matches both auto_approve (git *) and ask (git push*): ask wins.
    expect(engine.decide('Bash', bash('git push origin main')).decision).toBe('ask');
    expect(engine.decide('WebFetch', { url: 'https://example.com' }).decision).toBe('deny');
  });

  it('an unlisted tool is ask; in autonomous mode ask and unlisted are allowed, deny still denies', () => {
    expect(engine.decide('Write', { file_path: 'a' }).decision).toBe('ask');
    const autonomous = createPermissionEngine(lists, { autonomous: true });
    expect(autonomous.decide('Write', { file_path: 'a' }).decision).toBe('allow');
    expect(autonomous.decide('Bash', bash('git push')).decision).toBe('allow');
    expect(autonomous.decide('Bash', bash('rm -rf /tmp')).decision).toBe('deny');
  });

  it('rules people added with "always" apply after deny and before ask, the latest first', () => {
    const withRules = createPermissionEngine(lists, { autonomous: false });
    const rule = (id: string, decision: 'allow' | 'deny', pattern?: string): PermissionRule => ({
      rule_id: id,
      tool_name: 'Bash',
      ...(pattern ? { input_pattern: pattern } : {}),
      decision,
      added_by: 'alice',
      request_id: `r${id}`,
      added_at: '2026-11-22T09:00:00.000Z',
    });
    withRules.setAddedRules([rule('1', 'allow', 'npm test*'), rule('2', 'deny', 'npm test --bad*')]);
    expect(withRules.decide('Bash', bash('npm test -- --run'))).toEqual({ decision: 'allow', reason: "allowed by alice's rule Bash(npm test*)" });
    expect(withRules.decide('Bash', bash('npm test --bad')).decision).toBe('deny');
    expect(withRules.decide('Bash', bash('git push')).decision).toBe('ask');
    expect(withRules.decide('Bash', bash('rm -rf /')).decision).toBe('deny');
  });

  it('an answer by a rule given beyond this worker names its scope, what it applies to and its id (docs/teams.md, "Rules")', () => {
    const engine = createPermissionEngine(lists, { autonomous: false });
    engine.setAddedRules([
      {
        rule_id: '41',
        tool_name: 'command_execution',
        input_pattern: 'npm test',
        decision: 'allow',
        added_by: 'bob',
        request_id: 'r1',
        added_at: '2026-11-27T09:00:00.000Z',
        scope: 'team',
        scope_key: 'team:payments',
        worker_id: 'wrk_other',
      },
    ]);
    expect(engine.decide('command_execution', { command: 'npm test' })).toEqual({
      decision: 'allow',
      reason: "allowed by bob's team rule command_execution(npm test) (team:payments, rule 41)",
    });
  });

  it("an approval route's rule is asked whatever people's rules or autonomy say; only deny comes first (docs/teams.md)", () => {
    for (const autonomous of [false, true]) {
      const engine = createPermissionEngine({ ...lists, routed: ['Bash(git push*)'] }, { autonomous });
      engine.setAddedRules([{ rule_id: '5', tool_name: 'Bash', decision: 'allow', added_by: 'alice', request_id: 'r5', added_at: '2026-11-27T09:00:00.000Z' }]);
      expect(engine.decide('Bash', bash('git push origin main'))).toEqual({
        decision: 'ask',
        reason: 'routed by the rule Bash(git push*): the people it names decide',
      });
      expect(engine.decide('Bash', bash('git status')).decision).toBe('allow');
      expect(engine.decide('Bash', bash('rm -rf /')).decision).toBe('deny');
    }
  });

  it('a rule learned from a decision as it arrives is kept when a list read before it was stored comes back', () => {
    const engine = createPermissionEngine(lists, { autonomous: false });
    const rule = (id: string): PermissionRule => ({
      rule_id: id,
      tool_name: 'Bash',
      input_pattern: id === '7' ? 'make*' : 'npm test*',
      decision: 'allow',
      added_by: 'alice',
      request_id: `r${id}`,
      added_at: '2026-11-22T09:00:00.000Z',
    });
    engine.addRule(rule('12'));
    engine.setAddedRules([rule('7')]);
    expect(engine.decide('Bash', bash('npm test')).decision).toBe('allow');
    expect(engine.decide('Bash', bash('make all')).decision).toBe('allow');
  });

  it('patterns: * spans anything (spaces and slashes too), ? one character, the whole input must match; regex characters are literal', () => {
    expect(parseRequestRule('Write(src/*.ts)').matches('Write', { file_path: 'src/a/b.ts' })).toBe(true);
    expect(parseRequestRule('Write(src/*.ts)').matches('Write', { file_path: 'lib/src/b.ts' })).toBe(false);
    expect(parseRequestRule('Bash(ls ?)').matches('Bash', bash('ls a'))).toBe(true);
    expect(parseRequestRule('Bash(ls ?)').matches('Bash', bash('ls ab'))).toBe(false);
    expect(parseRequestRule('Bash(echo (x)+)').matches('Bash', bash('echo (x)+'))).toBe(true);
    expect(parseRequestRule('Bash(git *)').matches('Bash', {})).toBe(false);
  });

  it('patterns are matched in linear time: a pathological rule against a long command is decided at once', () => {
    const stars = createPermissionEngine({ auto_approve: [], deny: [`Bash(${'*a'.repeat(63)}b*)`], ask: [] }, { autonomous: false });
    const started = performance.now();
    expect(stars.decide('Bash', bash('a'.repeat(100_000))).decision).toBe('ask');
    expect(stars.decide('Bash', bash(`${'a'.repeat(100_000)}b`))).toEqual({ decision: 'deny', reason: `denied by the rule Bash(${'*a'.repeat(63)}b*)` });
    // A backtracking RegExp would take longer than anyone waits here.
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('a rule people added before the caps on wildcards still binds (caps are checked where rules enter, not when they match)', () => {
    const engine = createPermissionEngine(lists, { autonomous: false });
    const pattern = `${'*'.repeat(200)}danger*`;
    engine.addRule({
      rule_id: '9',
      tool_name: 'Bash',
      input_pattern: pattern,
      decision: 'deny',
      added_by: 'alice',
      request_id: 'r9',
      added_at: '2026-11-22T09:00:00.000Z',
    });
    expect(engine.decide('Bash', bash('git danger zone')).decision).toBe('deny');
    expect(engine.decide('Bash', bash('git status')).decision).toBe('allow');
  });
});
