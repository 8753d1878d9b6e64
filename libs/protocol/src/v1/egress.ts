import Type, { type Static } from 'typebox';
import { CodedError } from './errors.js';
import { compileGlob, parseToolRule, quoteRule, splitToolRule, type GlobOptions } from './rules.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/**
 * Egress (docs/egress.md): a sealed sandbox reaches nothing but its model and the gateway. What
 * else its agent may reach goes through the gateway as a CONNECT tunnel, decided like a tool call
 * on the target's name and the addresses it resolves to: the template's list allows, the
 * template's deny rules refuse, anything else is a `control_request` with this tool name and
 * input `EgressRequestInput`.
 */
export const EGRESS_TOOL = 'network';

/** The input of a `network` control_request: what a person decides on, the addresses the tunnel will really reach among it. */
export interface EgressRequestInput {
  /** `host:port` as rules read it: the host normalised (a lower-case name, or an IP literal's one spelling, IPv6 in brackets). */
  target: string;
  host: string;
  port: number;
  /** Every address the host resolved to (once, for this tunnel), in the order the tunnel tries them. */
  addresses: string[];
}

/**
 * A `host:port` rule of a template's `[sandbox] egress` list; `*` globs the host (`*.npmjs.org:443`)
 * or the port; the host may be an IP literal or a CIDR (`10.0.0.0/8:443`, `[fd00::/8]:443`).
 */
export const EGRESS_RULE_PATTERN =
  '^(?:[A-Za-z0-9.*\\-\\[\\]:]+|\\d{1,3}(?:\\.\\d{1,3}){3}/\\d{1,3}|\\[[0-9A-Fa-f:.]+(?:/\\d{1,3}\\]|\\]/\\d{1,3})):(\\d{1,5}|\\*)$';
export const EgressRuleSchema = Type.String({
  pattern: EGRESS_RULE_PATTERN,
  maxLength: 300,
  description: 'host:port, * allowed in either part; the host may be an IP address or a CIDR',
});

/**
 * A `host:port` rule (or target) cut at its last `:` (`[::1]:443` → `[::1]` and `443`); undefined
 * for a pattern without a port: none of `:` (`*`, `example.com`), nothing before it, or a `]`
 * after it (`[::1]`, a bracketed IPv6 address alone).
 */
export function splitEgressRule(rule: string): { host: string; port: string } | undefined {
  const colon = rule.lastIndexOf(':');
  if (colon <= 0 || rule.includes(']', colon)) return undefined;
  return { host: rule.slice(0, colon), port: rule.slice(colon + 1) };
}

/** Examples an error message gives of what a `host:port` pattern looks like. */
const EGRESS_PATTERN_EXAMPLES = '*.example.com:443, *:22, [2001:db8::1]:443, 10.0.0.0/8:*';

/**
 * What is wrong with a `host:port` pattern arriving at input (a `network(…)` rule's pattern, a
 * person's "always" `input_pattern` for the `network` tool, an entry of a template's egress list),
 * or undefined: `*` alone (every target), or a host (a name, a glob, an IP literal, a CIDR; IPv6
 * in brackets) and a port (1–65535, or a glob of digits, `*` and `?`) cut at the last `:`. A
 * pattern without a port would match no target (each has one), so it is refused rather than kept
 * as a rule that silently names nothing. The message follows the quoted rule or pattern.
 */
export function egressPatternProblem(pattern: string): string | undefined {
  const trimmed = pattern.trim();
  if (/^\*+$/.test(trimmed)) return undefined;
  if (trimmed.lastIndexOf(':') === 0) return `names no host: a network pattern is host:port (${EGRESS_PATTERN_EXAMPLES}), or * alone for every target`;
  const parts = splitEgressRule(trimmed);
  if (parts === undefined) return `names no port: a network pattern is host:port (${EGRESS_PATTERN_EXAMPLES}), or * alone for every target`;
  const { host, port } = parts;
  if (!/^[0-9*?]{1,5}$/.test(port) || (/^\d+$/.test(port) && (Number(port) < 1 || Number(port) > 65535)))
    return `has the port "${port}": a port is 1 to 65535, or a glob of digits, * and ? (${EGRESS_PATTERN_EXAMPLES})`;
  if (host.includes('[') || host.includes(']')) {
    // `[address]`, `[address/bits]` or `[address]/bits`: one pair of brackets, opening the host.
    if (!/^\[[^[\]]+\](?:\/\d{1,3})?$/.test(host))
      return `names the host "${host}", whose brackets are not one pair around an IPv6 address (${EGRESS_PATTERN_EXAMPLES}, [fd00::]/8:443)`;
  } else if (host.includes(':'))
    return `names the host "${host}" with a ":" outside brackets: an IPv6 address goes in brackets, so that its port is clear (${EGRESS_PATTERN_EXAMPLES})`;
  return undefined;
}

/**
 * Refuses a `host:port` pattern arriving at input that `egressPatternProblem` finds wrong, with
 * `invalid_request` (400) naming where it was, e.g. `/body/input_pattern: the pattern "example.com"
 * names no port: …`.
 */
export function checkEgressPattern(pattern: string, where: string): void {
  const problem = egressPatternProblem(pattern);
  if (problem !== undefined) throw new CodedError('invalid_request', `${where}: the pattern ${quoteRule(pattern)} ${problem}`, { field: where });
}

/** What the gateway needs to decide a worker's tunnels (kept in its worker record). */
export const EgressPolicySchema = Type.Object(
  {
    /** The template's `[sandbox] egress` list: reached without asking. */
    allow: Type.Array(EgressRuleSchema, { default: [] }),
    /** The template's deny rules for the `network` tool (`network(host:port)`): refused without asking. */
    deny: Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { default: [] }),
    /** Nobody is asked: what is not denied is allowed (and the policy's decision recorded). */
    autonomous: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
export type EgressPolicy = Static<typeof EgressPolicySchema>;

/** A tunnel's target. */
export interface EgressTarget {
  host: string;
  port: number;
  /** `host:port` (IPv6 hosts in brackets), what rules and requests name. */
  target: string;
}

/** Parses `host:port` (`[::1]:443` for IPv6); undefined when it is not one. */
export function parseEgressTarget(text: string): EgressTarget | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]{1,253}):(\d{1,5})$/.exec(text.trim());
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  const host = match[1]!.toLowerCase();
  return { host: host.replace(/^\[|\]$/g, ''), port, target: `${host}:${port}` };
}

/**
 * How a `host:port` rule reads a target: rule and target are cut into host and port at their last
 * `:` (an IPv6 host in brackets keeps its own), each part is matched on its own in linear time,
 * so `*` and `?` never span from host to port, and letters match in either case; `*` alone names
 * every target (docs/egress.md "Rules").
 */
export const EGRESS_GLOB: GlobOptions = { cutAtLast: ':', ignoreAsciiCase: true };

/** Whether a `host:port` rule (with `*` globs) names `target`. */
export function egressRuleMatches(rule: string, target: string): boolean {
  return compileGlob(rule, EGRESS_GLOB).matches(target);
}

/** Whether a tool rule is one of the `network` tool's (`network`, `network(host:port)`): those are the egress decision's. */
export function isNetworkRule(rule: string): boolean {
  return splitToolRule(rule).tool === EGRESS_TOOL;
}

/** Whether a `network` rule (`network` or `network(*)` for every target, or `network(host:port)`) names `target`; a rule of another tool names none. */
export function networkRuleMatches(rule: string, target: string): boolean {
  const parsed = parseToolRule(rule, EGRESS_GLOB);
  return parsed.tool === EGRESS_TOOL && parsed.matchesInput(target);
}

/** `system` event subtype of a tunnel opened or refused (every one is recorded). */
export const EGRESS_SUBTYPE = SYSTEM_SUBTYPES.egress;
