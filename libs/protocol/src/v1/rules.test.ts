import { describe, expect, it } from 'vitest';
import { PostControlBody } from './control-api.js';
import { CodedError } from './errors.js';
import {
  checkRuleLimits,
  compileGlob,
  parseToolRule,
  RULE_MAX_LENGTH,
  RULE_MAX_WILDCARDS,
  RULE_WILDCARDS_PATTERN,
  ruleLimitProblem,
  splitToolRule,
  type GlobOptions,
} from './rules.js';
import { createChecker } from './validation.js';

/** The textbook dynamic program (O(text × glob)), as the yardstick: `*` a run and `?` one character. */
function dynamicMatches(g: string, t: string): boolean {
  // row[j]: whether the glob's first i characters match the text's first j.
  let row = Array.from({ length: t.length + 1 }, (_, j) => j === 0);
  for (let i = 1; i <= g.length; i++) {
    const next = Array.from({ length: t.length + 1 }, () => false);
    const p = g[i - 1];
    if (p === '*') next[0] = row[0]!;
    for (let j = 1; j <= t.length; j++) {
      const c = t[j - 1];
      if (p === '*') next[j] = row[j]! || next[j - 1]!;
      else if (p === '?') next[j] = row[j - 1]!;
      else next[j] = row[j - 1]! && p === c;
    }
    row = next;
  }
  return row[t.length]!;
}

/** The yardstick with the options: case folded, and with a cut, head to head and tail to tail (a glob without the cut: `*` alone or nothing). */
function referenceMatches(glob: string, text: string, options: GlobOptions = {}): boolean {
  const fold = (s: string) => (options.ignoreAsciiCase ? s.replace(/[A-Z]/g, (c) => c.toLowerCase()) : s);
  const [g, t, cut] = [fold(glob), fold(text), options.cutAtLast];
  if (cut === undefined) return dynamicMatches(g, t);
  const [gc, tc] = [g.lastIndexOf(cut), t.lastIndexOf(cut)];
  if (gc < 0) return /^\*+$/.test(g);
  return tc >= 0 && dynamicMatches(g.slice(0, gc), t.slice(0, tc)) && dynamicMatches(g.slice(gc + 1), t.slice(tc + 1));
}

/** A small seeded generator, so a failure can be replayed. */
function randomFrom(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  return { int: (n: number) => Math.floor(next() * n), pick: (s: string) => s[Math.floor(next() * s.length)]! };
}

function repeatJoin(parts: number, make: (i: number) => string): string {
  return Array.from({ length: parts }, (_, i) => make(i)).join('');
}

describe('rules — parsing', () => {
  it('rules — Tool, a name glob and Tool(pattern); the name is trimmed, the pattern kept as written', () => {
    expect(splitToolRule('Read')).toEqual({ tool: 'Read', pattern: undefined });
    expect(splitToolRule('mcp__github__*')).toEqual({ tool: 'mcp__github__*', pattern: undefined });
    expect(splitToolRule(' Bash (git *) ')).toEqual({ tool: 'Bash', pattern: 'git *' });
    expect(splitToolRule('Bash(echo (x)+)')).toEqual({ tool: 'Bash', pattern: 'echo (x)+' });
    expect(splitToolRule('Bash()')).toEqual({ tool: 'Bash', pattern: '' });
    expect(splitToolRule('network(*.npmjs.org:443)')).toEqual({ tool: 'network', pattern: '*.npmjs.org:443' });
  });

  it('rules — text that is not Tool(pattern) is a name glob as a whole', () => {
    for (const text of ['Bash(git *', '(x)', 'a)b(c)', 'Bash)']) expect(splitToolRule(text)).toEqual({ tool: text, pattern: undefined });
  });

  it('rules — a parsed rule names tools by its glob and matches inputs by its pattern; only * patterns cover every input', () => {
    const rule = parseToolRule('mcp__*__create_?(repo *)');
    expect(rule.namesTool('mcp__github__create_x')).toBe(true);
    expect(rule.namesTool('mcp__github__create_xy')).toBe(false);
    expect(rule.matchesInput('repo svc')).toBe(true);
    expect(rule.matchesInput('other svc')).toBe(false);
    expect(parseToolRule('Bash').matchesInput('anything')).toBe(true);
    expect(parseToolRule('Bash').coversEveryInput).toBe(true);
    expect(parseToolRule('Bash(**)').coversEveryInput).toBe(true);
    expect(parseToolRule('Bash(git *)').coversEveryInput).toBe(false);
    expect(parseToolRule('Bash()').coversEveryInput).toBe(false);
  });
});

describe('rules — matching', () => {
  it('glob — * spans anything, ? one character, the whole text must match, other characters are literal', () => {
    const cases: Array<[string, string, boolean]> = [
      ['git *', 'git push origin main', true],
      ['git *', 'sudo git push', false],
      ['src/*.ts', 'src/a/b.ts', true],
      ['src/*.ts', 'src/a/b.tsx', false],
      ['ls ?', 'ls a', true],
      ['ls ?', 'ls ab', false],
      ['ls ?', 'ls ', false],
      ['echo (x)+ [a-z]$ ^.\\', 'echo (x)+ [a-z]$ ^.\\', true],
      ['a.c', 'abc', false],
      ['*', '', true],
      ['', '', true],
      ['', 'a', false],
      ['*ab*ab*', 'abab', true],
      ['*ab*ab*', 'aba', false],
      ['a*b?c*d', 'aXbYcd', true],
      ['a*b?c*d', 'abcd', false],
      ['*line\n*', 'first line\nsecond', true],
    ];
    for (const [glob, text, expected] of cases) expect(compileGlob(glob).matches(text), `${JSON.stringify(glob)} ~ ${JSON.stringify(text)}`).toBe(expected);
  });

  it('glob — with a cut, glob and text are cut at their last one and * and ? stay on their side of it', () => {
    const hostPort: GlobOptions = { cutAtLast: ':' };
    expect(compileGlob('*.github.com:443', hostPort).matches('api.github.com:443')).toBe(true);
    // The head may hold the cut too: an IPv6 host in brackets is one part.
    expect(compileGlob('*:443', hostPort).matches('[2001:db8::1]:443')).toBe(true);
    expect(compileGlob('*:443', hostPort).matches('[2001:db8::1]:4430')).toBe(false);
    expect(compileGlob('[::1]:*', hostPort).matches('[::1]:8080')).toBe(true);
    expect(compileGlob('[2001:db8::*]:22', hostPort).matches('[2001:db8::1:5]:22')).toBe(true);
    // `*` in the head never reaches into the tail, nor `?`.
    expect(compileGlob('*:2', hostPort).matches('example.com:22')).toBe(false);
    expect(compileGlob('example.com*:2', hostPort).matches('example.com:22')).toBe(false);
    expect(compileGlob('example.com?443', hostPort).matches('example.com:443')).toBe(false);
    expect(compileGlob('*:*', hostPort).matches('example.com:443')).toBe(true);
    expect(compileGlob('*:*', hostPort).matches('example.com')).toBe(false);
    // A glob without the cut: `*` alone is every text, anything else none.
    expect(compileGlob('*', hostPort).matches('example.com:443')).toBe(true);
    expect(compileGlob('**', hostPort).matches('no cut here')).toBe(true);
    expect(compileGlob('example.com', hostPort).matches('example.com')).toBe(false);
    expect(compileGlob('*443', hostPort).matches('example.com:443')).toBe(false);
    expect(compileGlob('', hostPort).matches('')).toBe(false);
  });

  it('glob — ignoring ASCII case folds the glob and the text', () => {
    expect(compileGlob('EXAMPLE.*:443', { cutAtLast: ':', ignoreAsciiCase: true }).matches('example.COM:443')).toBe(true);
    expect(compileGlob('EXAMPLE.*').matches('example.com')).toBe(false);
  });

  it('glob — agrees with the textbook dynamic program on 20,000 random globs and texts', () => {
    const random = randomFrom(34);
    const word = (alphabet: string, max: number) => repeatJoin(random.int(max + 1), () => random.pick(alphabet));
    for (let i = 0; i < 20_000; i++) {
      const options: GlobOptions = [{}, { cutAtLast: ':' }, { cutAtLast: ':', ignoreAsciiCase: true }][i % 3]!;
      // Short alphabets make near-misses, overlaps and periodic segments (KMP's borders) common.
      const glob = word('ab*?:A', 12);
      const text = word('abB:', 14);
      expect(compileGlob(glob, options).matches(text), `${JSON.stringify(glob)} ~ ${JSON.stringify(text)} ${JSON.stringify(options)}`).toBe(
        referenceMatches(glob, text, options),
      );
    }
  });

  it('glob — agrees with the dynamic program on 5,000 random globs whose segments run past eight characters', () => {
    // Short segments are found by indexOf and checked in place; longer ones by KMP or Shift-And.
    const random = randomFrom(36);
    const word = (alphabet: string, max: number) => repeatJoin(random.int(max + 1), () => random.pick(alphabet));
    const segment = () => word('aab?', 14);
    for (let i = 0; i < 5_000; i++) {
      // Stars at both ends: every segment is searched for, none pinned to an end.
      const glob = ['', ...Array.from({ length: 1 + random.int(3) }, segment), ''].join('*');
      const text = word('ab', 48);
      expect(compileGlob(glob).matches(text), `${JSON.stringify(glob)} ~ ${JSON.stringify(text)}`).toBe(referenceMatches(glob, text));
    }
  });

  it('glob — segments longer than one 32-bit word of Shift-And state still match exactly', () => {
    const segment = `${'a?'.repeat(30)}b`; // 61 characters with `?`: two words of state.
    const glob = `*${segment}*`;
    const text = `${'ab'.repeat(40)}${'ax'.repeat(30)}b${'c'.repeat(10)}`;
    expect(compileGlob(glob).matches(text)).toBe(referenceMatches(glob, text));
    expect(compileGlob(glob).matches(text)).toBe(true);
    expect(compileGlob(glob).matches(text.replace(/b(c+)$/, 'x$1'))).toBe(false);
    const literal = `*${'ab'.repeat(40)}c*`; // KMP over a long periodic segment.
    expect(compileGlob(literal).matches(`${'ab'.repeat(79)}c`)).toBe(true);
    expect(compileGlob(literal).matches(`${'ab'.repeat(79)}d`)).toBe(false);
  });

  it('glob — a pathological glob (*a*a*…*b) against a long run of a finishes at once', () => {
    const text = 'a'.repeat(100_000);
    const globs = [
      `${'*a'.repeat(RULE_MAX_WILDCARDS - 1)}*b`,
      `${'*a'.repeat(RULE_MAX_WILDCARDS - 1)}b*`,
      `*${'a?'.repeat(RULE_MAX_WILDCARDS - 2)}b*`,
      `${'*aa'.repeat(RULE_MAX_WILDCARDS - 1)}*`.replace(/\*$/, 'b*'),
    ];
    const started = performance.now();
    for (const glob of globs) expect(compileGlob(glob).matches(text)).toBe(false);
    expect(parseToolRule(`Bash(${globs[0]})`).matchesInput(text)).toBe(false);
    // Linear: four passes over 100,000 characters; a backtracking matcher would not finish today.
    expect(performance.now() - started).toBeLessThan(200);
  });
});

describe('rules — caps at input', () => {
  it('rules — 64 wildcards and 1024 characters are accepted', () => {
    expect(ruleLimitProblem(`network(${'*.'.repeat(RULE_MAX_WILDCARDS - 1)}*)`)).toBeUndefined();
    expect(ruleLimitProblem(`Bash(${'x'.repeat(RULE_MAX_LENGTH - 6)})`)).toBeUndefined();
    expect(() => checkRuleLimits('Bash(git *)', '/sidecar/deny/0')).not.toThrow();
  });

  it('rules — more wildcards or a longer rule is refused with invalid_request (400) naming where and the rule', () => {
    const stars = `network(${'*'.repeat(500)})`;
    let refusal: unknown;
    try {
      checkRuleLimits(stars, '/sidecar/deny/0');
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(CodedError);
    expect((refusal as CodedError).code).toBe('invalid_request');
    expect((refusal as CodedError).status).toBe(400);
    expect((refusal as CodedError).message).toBe(
      `/sidecar/deny/0: the rule "network(${'*'.repeat(72)}…" has 500 wildcards (* and ?); a rule may have at most ${RULE_MAX_WILDCARDS}`,
    );
    expect(ruleLimitProblem(`Bash(${'?'.repeat(RULE_MAX_WILDCARDS + 1)})`)).toBe(`has 65 wildcards (* and ?); a rule may have at most 64`);
    expect(() => checkRuleLimits('x'.repeat(RULE_MAX_LENGTH + 1), '/body/input_pattern')).toThrow(
      /^\/body\/input_pattern: the rule "x+…" is 1025 characters long; a rule may have at most 1024$/,
    );
  });

  it('rules — the schema pattern for a request body counts wildcards as the check does', () => {
    const cap = new RegExp(RULE_WILDCARDS_PATTERN, 'u');
    for (const count of [0, 1, RULE_MAX_WILDCARDS, RULE_MAX_WILDCARDS + 1, 500]) {
      const pattern = repeatJoin(count, (i) => (i % 2 ? 'x?' : 'y*'));
      expect(cap.test(pattern), `${count} wildcards`).toBe(ruleLimitProblem(pattern) === undefined);
    }
    expect(cap.test('npm test*')).toBe(true);
  });

  it('rules — a person\'s "always" input_pattern beyond the caps is refused by the decision\'s schema, naming the field', () => {
    const checker = createChecker(PostControlBody);
    const decision = (inputPattern: string) => ({ request_id: 'req_1', decision: 'allow', scope: 'always', input_pattern: inputPattern });
    expect(checker.check(decision(`npm test ${'*'.repeat(RULE_MAX_WILDCARDS - 1)}?`)).ok).toBe(true);
    for (const bad of [`${'*'.repeat(500)}`, `a${'?'.repeat(RULE_MAX_WILDCARDS + 1)}`, 'x'.repeat(RULE_MAX_LENGTH + 1)]) {
      const result = checker.check(decision(bad));
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.errors.map((error) => error.field)).toEqual(['/input_pattern']);
    }
  });
});
