import { CodedError } from './errors.js';

/**
 * Tool rules (docs/sidecar.md "Rule syntax"): `Tool` or a glob over tool names (`mcp__github__*`),
 * and `Tool(pattern)`, a glob over the tool's main input (`Bash(git *)`, `network(*.npmjs.org:443)`).
 * One parser and one matcher serve the sidecar's permission engine, the gateway's egress decision
 * and the spawn pipeline. Globs are never compiled to RegExps: a backtracking engine's time grows
 * as the text's length to the power of the number of `*` (twelve took seconds on the gateway's
 * event loop); this matcher's grows linearly with the text, whatever the pattern.
 */

/** The longest rule (or bare pattern) accepted at input, in characters. */
export const RULE_MAX_LENGTH = 1024;
/** The most wildcards (`*` and `?` together) a rule (or bare pattern) may hold at input. */
export const RULE_MAX_WILDCARDS = 64;

const STAR = 0x2a;
const QUESTION = 0x3f;

/** How a glob reads its text. */
export interface GlobOptions {
  /**
   * Where the text is cut in two (egress: `:`, between host and port). The text and the glob are
   * each cut at their LAST one, and each half of the glob matches the same half of the text on
   * its own, so `*` and `?` never span the cut, while the head may hold it too: `*:22` names
   * `[2001:db8::1]:22`, whose host is `[2001:db8::1]`. A text without it matches only a glob of
   * `*` alone; a glob without it is `*` alone (every text, as `coversEveryInput` reads it) or
   * matches nothing.
   */
  cutAtLast?: string;
  /** ASCII letters match either case (host names). */
  ignoreAsciiCase?: boolean;
}

/** A compiled glob: `*` any run of characters, `?` one character, every other character itself; the whole text must match. */
export interface Glob {
  readonly source: string;
  matches(text: string): boolean;
}

/**
 * Scratch space for the one search running at a time. Matching is synchronous and calls out to
 * nothing, so one set serves every call, and a decision over thousands of rules makes no tables.
 */
let borders: Int32Array = new Int32Array(64);
/** Shift-And: each character's class (0: in no position of the segment), over every UTF-16 code unit; made on first use. */
let classOf: Int32Array | undefined;
let classMasks: Int32Array = new Int32Array(64);
let shiftState: Int32Array = new Int32Array(32);

const atLeast = (buffer: Int32Array, size: number): Int32Array => (buffer.length >= size ? buffer : new Int32Array(Math.max(size, buffer.length * 2)));

/** Whether `glob[start, end)` (no `*`; `?` one character) matches `text` at `at`; the caller has checked that it fits. */
function segmentAt(glob: string, start: number, end: number, text: string, at: number): boolean {
  for (let i = start, j = at; i < end; i++, j++) {
    const want = glob.charCodeAt(i);
    if (want !== QUESTION && want !== text.charCodeAt(j)) return false;
  }
  return true;
}

/**
 * Segments this long or shorter are found by the engine's own `indexOf` (`?` aside), each place it
 * gives checked in at most this many steps. Rules are mostly short pieces between stars: a search
 * that builds a table first (KMP, Shift-And) costs more than it saves there.
 */
const SHORT_SEGMENT = 8;

/**
 * The first place `glob[start, end)` (no `*`; `?` one character; `wildcard` when it holds a `?`)
 * occurs in `text[from, until)`, or -1. A short segment costs O(`SHORT_SEGMENT` × (until − from))
 * at most; a longer one O((end − start) + (until − from)) times ⌈length / 32⌉ when it holds a `?`.
 */
function segmentSearch(glob: string, start: number, end: number, wildcard: boolean, text: string, from: number, until: number): number {
  const length = end - start;
  if (length > SHORT_SEGMENT) return wildcard ? wildcardSearch(glob, start, end, text, from, until) : literalSearch(glob, start, end, text, from, until);
  if (!wildcard) {
    const found = text.indexOf(length === 1 ? glob.charAt(start) : glob.slice(start, end), from);
    return found >= 0 && found + length <= until ? found : -1;
  }
  // The places where its first character other than `?` occurs, each checked whole.
  let anchor = start;
  while (anchor < end && glob.charCodeAt(anchor) === QUESTION) anchor++;
  if (anchor === end) return until - from >= length ? from : -1;
  const offset = anchor - start;
  const character = glob.charAt(anchor);
  for (let at = from; at + length <= until;) {
    const seen = text.indexOf(character, at + offset) - offset;
    if (seen < from || seen + length > until) return -1;
    if (segmentAt(glob, start, end, text, seen)) return seen;
    at = seen + 1;
  }
  return -1;
}

/**
 * Knuth–Morris–Pratt for a longer segment without `?`: the first place `glob[start, end)` occurs in
 * `text[from, until)`, or -1, in O((end − start) + (until − from)).
 */
function literalSearch(glob: string, start: number, end: number, text: string, from: number, until: number): number {
  const length = end - start;
  if (length === 1) {
    const only = glob.charCodeAt(start);
    for (let j = from; j < until; j++) if (text.charCodeAt(j) === only) return j;
    return -1;
  }
  const border = (borders = atLeast(borders, length));
  // border[i]: the length of the longest proper prefix of the segment's first i + 1 characters that is also their suffix.
  border[0] = 0;
  for (let i = 1, k = 0; i < length; i++) {
    const code = glob.charCodeAt(start + i);
    while (k > 0 && code !== glob.charCodeAt(start + k)) k = border[k - 1]!;
    if (code === glob.charCodeAt(start + k)) k++;
    border[i] = k;
  }
  for (let j = from, k = 0; j < until; j++) {
    const got = text.charCodeAt(j);
    while (k > 0 && got !== glob.charCodeAt(start + k)) k = border[k - 1]!;
    if (got === glob.charCodeAt(start + k)) k++;
    if (k === length) return j - length + 1;
  }
  return -1;
}

/**
 * Shift-And for a longer segment with `?`, where KMP's borders do not hold (a position that matches
 * anything): bit i of the state says "the segment's first i + 1 characters end here". One pass
 * over the text, ⌈length / 32⌉ words per character.
 */
function wildcardSearch(glob: string, start: number, end: number, text: string, from: number, until: number): number {
  const length = end - start;
  const words = (length + 31) >>> 5;
  const classes = (classOf ??= new Int32Array(0x10000));
  const masks = (classMasks = atLeast(classMasks, (length + 1) * words));
  const state = (shiftState = atLeast(shiftState, words));
  masks.fill(0, 0, (length + 1) * words);
  // Class 0 (a character the segment does not hold) matches at the `?` positions only; every other class at its own positions too.
  let count = 0;
  for (let i = 0; i < length; i++) {
    const code = glob.charCodeAt(start + i);
    const bit = 1 << (i & 31);
    if (code === QUESTION) masks[i >>> 5] = masks[i >>> 5]! | bit;
    else {
      if (classes[code] === 0) classes[code] = ++count;
      const at = classes[code]! * words + (i >>> 5);
      masks[at] = masks[at]! | bit;
    }
  }
  for (let c = 1; c <= count; c++) for (let w = 0; w < words; w++) masks[c * words + w] = masks[c * words + w]! | masks[w]!;
  state.fill(0, 0, words);
  const last = words - 1;
  const complete = 1 << ((length - 1) & 31);
  let found = -1;
  for (let j = from; j < until; j++) {
    const base = classes[text.charCodeAt(j)]! * words;
    let carry = 1;
    for (let w = 0; w < words; w++) {
      const before = state[w]!;
      state[w] = ((before << 1) | carry) & masks[base + w]!;
      carry = before >>> 31;
    }
    if ((state[last]! & complete) !== 0) {
      found = j - length + 1;
      break;
    }
  }
  for (let i = start; i < end; i++) classes[glob.charCodeAt(i)] = 0;
  return found;
}

/**
 * Whether `glob[start, end)` (no separator) matches all of `text[from, until)`. The glob's first
 * segment must open the text and its last close it; the segments between are found left to
 * right, each at its earliest place after the previous one. The earliest place never loses a
 * match (a later one leaves less room for the rest), so nothing is retried: each text character
 * is scanned by one segment's search at most.
 */
function partMatches(glob: string, start: number, end: number, text: string, from: number, until: number): boolean {
  const firstStar = glob.indexOf('*', start);
  if (firstStar < 0 || firstStar >= end) return until - from === end - start && segmentAt(glob, start, end, text, from);
  const lastStar = glob.lastIndexOf('*', end - 1);
  const head = firstStar - start;
  const tail = end - lastStar - 1;
  if (until - from < head + tail) return false;
  if (!segmentAt(glob, start, firstStar, text, from) || !segmentAt(glob, lastStar + 1, end, text, until - tail)) return false;
  let at = from + head;
  const stop = until - tail;
  for (let segment = firstStar + 1; segment < lastStar;) {
    // The segment runs to the next `*` (there is one: the last); does it hold a `?`?
    let star = segment;
    let wildcard = false;
    for (let code = glob.charCodeAt(star); code !== STAR; code = glob.charCodeAt(++star)) if (code === QUESTION) wildcard = true;
    if (star > segment) {
      const found = segmentSearch(glob, segment, star, wildcard, text, at, stop);
      if (found < 0) return false;
      at = found + (star - segment);
    }
    segment = star + 1;
  }
  return true;
}

/** Whether a glob is `*` alone (one or more): it matches every text. */
function onlyStars(glob: string): boolean {
  if (glob.length === 0) return false;
  for (let i = 0; i < glob.length; i++) if (glob.charCodeAt(i) !== STAR) return false;
  return true;
}

/** Whether `glob` matches all of `text`, its head and its tail each on its own when there is a cut. */
function globMatches(glob: string, text: string, cut: string | undefined): boolean {
  if (cut === undefined || cut.length === 0) return partMatches(glob, 0, glob.length, text, 0, text.length);
  const globCut = glob.lastIndexOf(cut);
  if (globCut < 0) return onlyStars(glob);
  const textCut = text.lastIndexOf(cut);
  if (textCut < 0) return false;
  return partMatches(glob, 0, globCut, text, 0, textCut) && partMatches(glob, globCut + cut.length, glob.length, text, textCut + cut.length, text.length);
}

/** Lowercases ASCII letters only (both sides of a case-blind glob; a text that has none is returned as it is). */
function lowerAscii(text: string): string {
  return /[A-Z]/.test(text) ? text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase()) : text;
}

/**
 * A glob ready to match. Matching takes time linear in the glob and the text (times
 * `SHORT_SEGMENT` at most for short segments, ⌈segment length / 32⌉ for longer ones holding
 * `?`) and never backtracks; it allocates nothing but the short literal segments it looks for
 * and, when case is ignored, a lowercased copy of a text with capitals.
 */
export function compileGlob(source: string, options: GlobOptions = {}): Glob {
  const fold = options.ignoreAsciiCase === true;
  const glob = fold ? lowerAscii(source) : source;
  const cut = options.cutAtLast;
  return { source, matches: (text) => globMatches(glob, fold ? lowerAscii(text) : text, cut) };
}

/** The two halves of a rule as written: `Tool` or `Tool(pattern)`. */
export interface ToolRuleParts {
  /** The tool name or name glob, trimmed. */
  tool: string;
  /** The glob over the tool's main input; undefined for a rule without parentheses (every input). */
  pattern: string | undefined;
}

/**
 * Parses a rule's text: `Tool(pattern)` when the trimmed text ends with `)` and the name before
 * the first `(` holds no parenthesis (`Bash(echo (x)+)` is `Bash` with `echo (x)+`); anything
 * else is a name glob as a whole.
 */
export function splitToolRule(source: string): ToolRuleParts {
  const trimmed = source.trim();
  const open = trimmed.indexOf('(');
  if (open > 0 && trimmed.endsWith(')') && !trimmed.slice(0, open).includes(')'))
    return { tool: trimmed.slice(0, open).trim(), pattern: trimmed.slice(open + 1, -1) };
  return { tool: trimmed, pattern: undefined };
}

/** A parsed rule, ready to match. */
export interface ToolRule extends ToolRuleParts {
  readonly source: string;
  /** Whether the rule is about this tool (its name glob matches, whatever its pattern). */
  namesTool(toolName: string): boolean;
  /** Whether its pattern matches this input; a rule without a pattern matches every input. */
  matchesInput(input: string): boolean;
  /** No pattern, or one of only `*`: it matches every call of the tools it names. */
  readonly coversEveryInput: boolean;
}

/**
 * Parses and compiles a rule. `patternOptions` say how its pattern reads the input (the egress
 * decision: host and port are cut at the last `:`). Any text is a rule; the caps are checked where rules
 * are accepted (`checkRuleLimits`), so a rule stored before them still matches, in linear time.
 */
export function parseToolRule(source: string, patternOptions: GlobOptions = {}): ToolRule {
  const { tool, pattern } = splitToolRule(source);
  const name = compileGlob(tool);
  const input = pattern === undefined ? undefined : compileGlob(pattern, patternOptions);
  return {
    source,
    tool,
    pattern,
    namesTool: (toolName) => name.matches(toolName),
    matchesInput: (value) => input === undefined || input.matches(value),
    coversEveryInput: pattern === undefined || onlyStars(pattern),
  };
}

/** What is wrong with a rule (or bare pattern) arriving at input, or undefined when it is within the caps. */
export function ruleLimitProblem(rule: string): string | undefined {
  if (rule.length > RULE_MAX_LENGTH) return `is ${rule.length} characters long; a rule may have at most ${RULE_MAX_LENGTH}`;
  let wildcards = 0;
  for (let i = 0; i < rule.length; i++) {
    const code = rule.charCodeAt(i);
    if (code === STAR || code === QUESTION) wildcards++;
  }
  if (wildcards > RULE_MAX_WILDCARDS) return `has ${wildcards} wildcards (* and ?); a rule may have at most ${RULE_MAX_WILDCARDS}`;
  return undefined;
}

/** A rule as an error message shows it: quoted, and cut short when long. */
export function quoteRule(rule: string): string {
  return JSON.stringify(rule.length > 80 ? `${rule.slice(0, 80)}…` : rule);
}

/**
 * Refuses a rule beyond the caps with `invalid_request` (400) naming where it was and the rule,
 * e.g. `/sidecar/deny/0: the rule "network(***…" has 500 wildcards (* and ?); a rule may have at most 64`.
 */
export function checkRuleLimits(rule: string, where: string): void {
  const problem = ruleLimitProblem(rule);
  if (problem !== undefined) throw new CodedError('invalid_request', `${where}: the rule ${quoteRule(rule)} ${problem}`, { field: where });
}

/**
 * The wildcard cap as a JSON-schema `pattern`, for a rule's pattern arriving in a request body
 * (an "always" decision's `input_pattern`), so the edge refuses it before anything stores it.
 * Each character has one way through it, so this check is linear too.
 */
export const RULE_WILDCARDS_PATTERN = `^[^*?]*(?:[*?][^*?]*){0,${RULE_MAX_WILDCARDS}}$`;
