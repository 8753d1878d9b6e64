import { EGRESS_GLOB, EGRESS_TOOL, compileGlob, splitEgressRule, splitToolRule, type EgressPolicy, type PermissionRule } from '@svc/protocol';
import type { Verdict } from '../raised-requests.js';
import { addressInCidr, classRefusalReason, normaliseHost, parseCidr, type InspectedAddress } from '@svc/service-kit';

/**
 * Egress rules read on names and addresses (docs/egress.md "Rules on names and addresses"): a
 * tunnel's target is resolved once, and every rule and refusal is weighed against its name as
 * asked and each address it resolved to, so `2130706433:22`, `0x7f.1:22` and
 * `db.127.0.0.1.nip.io:22` are all what they reach, 127.0.0.1:22.
 */

/** A tunnel's target, resolved. */
export interface ResolvedTarget {
  /** `host:port` with the host normalised (a lower-case name, or an IP literal's one spelling; IPv6 in brackets). */
  target: string;
  host: string;
  port: number;
  /** The host's name; undefined when it is an IP literal. */
  name: string | undefined;
  /** Every address it resolved to (a literal: itself), with its class; the tunnel is made to the first that answers. */
  addresses: readonly InspectedAddress[];
}

/** The target as rules read it, from what the address check found of `host:port` (an IP literal: itself; a name: its addresses). */
export function resolvedTarget(port: number, found: { name: string | undefined; addresses: readonly InspectedAddress[] }): ResolvedTarget {
  const host = found.name ?? found.addresses[0]!.address;
  return { target: found.name === undefined ? addressTarget(host, port) : `${host}:${port}`, host, port, name: found.name, addresses: found.addresses };
}

/** `address:port` as rules and requests write it (IPv6 in brackets). */
function addressTarget(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

/** A `host:port` rule, ready to match a resolved target. */
export interface EgressRule {
  readonly source: string;
  /** Its host is an IP literal (any spelling) or a CIDR, without a glob: the only rules that name an address itself. */
  readonly namesAddresses: boolean;
  /** Whether it names the target as asked (a name rule and its glob; an address rule reads addresses only). */
  matchesName(target: ResolvedTarget): boolean;
  /** Whether it names `address` on `port`. */
  matchesAddress(address: string, port: number): boolean;
}

/** The range a rule's host names: an IP literal (canonical) or a CIDR; undefined for a name or a glob. */
function rangeOfHost(host: string): string | undefined {
  if (/[*?]/.test(host)) return undefined;
  const bare = host.replace(/[[\]]/g, '');
  if (bare.includes('/')) return parseCidr(bare) ? bare : undefined;
  const normalised = normaliseHost(bare);
  return normalised && 'address' in normalised ? normalised.address : undefined;
}

/**
 * Compiles a `host:port` rule (an egress list entry, a `network(…)` rule's pattern, a person's
 * `input_pattern`). Rule and target are cut into host and port at their last `:`, so a glob host
 * names IPv6 targets too (`*:22` names `[2001:db8::1]:22`), and `*` alone names every target.
 */
export function compileEgressRule(source: string): EgressRule {
  const text = source.trim();
  const parts = splitEgressRule(text);
  const range = parts ? rangeOfHost(parts.host) : undefined;
  if (parts && range !== undefined) {
    const port = compileGlob(parts.port);
    return {
      source,
      namesAddresses: true,
      matchesName: () => false,
      matchesAddress: (address, targetPort) => port.matches(String(targetPort)) && addressInCidr(address, range),
    };
  }
  const glob = compileGlob(text, EGRESS_GLOB);
  return {
    source,
    namesAddresses: false,
    matchesName: (target) => glob.matches(target.target),
    matchesAddress: (address, port) => glob.matches(addressTarget(address, port)),
  };
}

/** A rule that refuses: it names the target, or any address the target resolved to. */
function refuses(rule: EgressRule, target: ResolvedTarget): boolean {
  return rule.matchesName(target) || target.addresses.some(({ address }) => rule.matchesAddress(address, target.port));
}

/** Rules that let through: one names the target, or every address it resolved to is named by one of them. */
function letThrough(rules: readonly EgressRule[], target: ResolvedTarget): boolean {
  return (
    rules.some((rule) => rule.matchesName(target)) || target.addresses.every(({ address }) => rules.some((rule) => rule.matchesAddress(address, target.port)))
  );
}

/**
 * The `network` tool's rule as a host:port rule: `network` (and `network(*)`, whose glob is `*`
 * alone) names every target; another tool's rule none, nor a pattern without a port (refused where
 * rules are accepted: `egressPatternProblem`).
 */
function networkRule(rule: string): EgressRule | 'every' | undefined {
  const { tool, pattern } = splitToolRule(rule);
  if (tool !== EGRESS_TOOL) return undefined;
  return pattern === undefined ? 'every' : compileEgressRule(pattern);
}

/**
 * What the template decides before anyone is asked, or undefined when it leaves the target to
 * people (or the autonomous policy). In order: a metadata address is refused; the template's
 * `network(…)` deny rules refuse (by name or any address); an address that is not the outside
 * (loopback, private, link-local, …, outside the operator's `SVC_EGRESS_ALLOWED_CIDRS`) is
 * refused unless an entry of the template's egress list names that address itself (an IP
 * literal or a CIDR); then the egress list lets the target through (by name, or every address).
 */
export function templateVerdict(policy: Pick<EgressPolicy, 'allow' | 'deny'>, target: ResolvedTarget): Verdict | undefined {
  const metadata = target.addresses.find((address) => address.addressClass === 'metadata');
  if (metadata) return { allow: false, by: 'policy', reason: classRefusalReason(target.name, metadata.address, metadata.addressClass) };
  for (const text of policy.deny) {
    const rule = networkRule(text);
    if (rule === 'every' || (rule && refuses(rule, target))) return { allow: false, by: 'policy', reason: `denied by the template's rule ${text}` };
  }
  const listed = policy.allow.map(compileEgressRule);
  const closed = target.addresses.find(
    ({ address, allowed }) => !allowed && !listed.some((rule) => rule.namesAddresses && rule.matchesAddress(address, target.port)),
  );
  if (closed)
    return {
      allow: false,
      by: 'policy',
      reason: `${classRefusalReason(target.name, closed.address, closed.addressClass)}, which nobody may open but the template's egress list, naming that address`,
    };
  if (listed.length > 0 && letThrough(listed, target))
    return { allow: true, by: 'policy', reason: `listed in the template's egress (${policy.allow.join(', ')})` };
  return undefined;
}

/**
 * What the rules people added with "always" for the `network` tool decide, or undefined when none
 * applies. The newest that applies wins: a deny rule when it names the target or any of its
 * addresses, an allow rule when it names the target or every one of them (no `input_pattern`:
 * every target).
 */
export function peopleVerdict(rules: readonly PermissionRule[], target: ResolvedTarget): Verdict | undefined {
  for (const rule of [...rules].reverse()) {
    if (rule.tool_name !== EGRESS_TOOL) continue;
    const pattern = rule.input_pattern === undefined ? undefined : compileEgressRule(rule.input_pattern);
    const applies = pattern === undefined || (rule.decision === 'deny' ? refuses(pattern, target) : letThrough([pattern], target));
    if (!applies) continue;
    const named = `${EGRESS_TOOL}${rule.input_pattern === undefined ? '' : `(${rule.input_pattern})`}`;
    return {
      allow: rule.decision === 'allow',
      by: rule.added_by,
      reason: `${rule.decision === 'allow' ? 'allowed' : 'denied'} by ${rule.added_by}'s rule ${named}`,
    };
  }
  return undefined;
}
