import Type, { type Static } from 'typebox';
import { compileGlob, parseToolRule, splitToolRule, type GlobOptions } from './rules.js';
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
 * A `host:port` rule cut at its last `:` (`[::1]:443` → `[::1]` and `443`); undefined for a
 * pattern without one (`*`, which names no target).
 */
export function splitEgressRule(rule: string): { host: string; port: string } | undefined {
  const colon = rule.lastIndexOf(':');
  if (colon <= 0) return undefined;
  return { host: rule.slice(0, colon), port: rule.slice(colon + 1) };
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
 * How a `host:port` rule reads a target: `*` and `?` stay within the host or the port (each part
 * is matched on its own, in linear time: docs/egress.md "Rules"), letters in either case.
 */
export const EGRESS_GLOB: GlobOptions = { separator: ':', ignoreAsciiCase: true };

/** Whether a `host:port` rule (with `*` globs) names `target`. */
export function egressRuleMatches(rule: string, target: string): boolean {
  return compileGlob(rule, EGRESS_GLOB).matches(target);
}

/** Whether a tool rule is one of the `network` tool's (`network`, `network(host:port)`): those are the egress decision's. */
export function isNetworkRule(rule: string): boolean {
  return splitToolRule(rule).tool === EGRESS_TOOL;
}

/** Whether a `network` rule (`network` for every target, or `network(host:port)`) names `target`; a rule of another tool names none. */
export function networkRuleMatches(rule: string, target: string): boolean {
  const parsed = parseToolRule(rule, EGRESS_GLOB);
  return parsed.tool === EGRESS_TOOL && parsed.matchesInput(target);
}

/** `system` event subtype of a tunnel opened or refused (every one is recorded). */
export const EGRESS_SUBTYPE = SYSTEM_SUBTYPES.egress;
