import { primaryInputs, type PolicySuggestion, type StoredEvent } from '@svc/protocol';

/** A request and what a person decided on it, as the policy reads the decision log. */
export interface DecidedRequest {
  request: StoredEvent<'control_request'>;
  /** A person's decision (`sub`), or undefined when no person decided it. */
  person?: { decision: 'allow' | 'deny'; by: string } | undefined;
}

interface Tally {
  rule: string;
  allowed: number;
  denied: number;
  inputs: Set<string>;
  deciders: Set<string>;
  examples: string[];
  lastAt: string;
}

/** The share of denials at or above which a family of commands is proposed for `deny`. */
const DENY_SHARE = 0.9;

/**
 * A request's keys: the exact rule (`Bash(npm test)`) and, for a command of several words, its
 * family (`Bash(curl *)`, by the first word). A tool without a main input has its name alone.
 */
function keysOf(request: StoredEvent<'control_request'>): { exact: string; family?: string | undefined; input: string } {
  const tool = request.data.tool_name;
  const input = primaryInputs(request.data.input)?.[0];
  if (input === undefined || /[()*?\n]/.test(input)) return { exact: tool, input: input ?? '' };
  const first = input.split(' ')[0]!;
  return { exact: `${tool}(${input})`, family: input.includes(' ') ? `${tool}(${first} *)` : undefined, input };
}

function count(tallies: Map<string, Tally>, rule: string, decided: DecidedRequest, input: string): void {
  let tally = tallies.get(rule);
  if (!tally) tallies.set(rule, (tally = { rule, allowed: 0, denied: 0, inputs: new Set(), deciders: new Set(), examples: [], lastAt: decided.request.ts }));
  if (decided.person!.decision === 'allow') tally.allowed++;
  else tally.denied++;
  tally.deciders.add(decided.person!.by);
  if (!tally.inputs.has(input) && tally.examples.length < 3) tally.examples.push(input);
  tally.inputs.add(input);
  if (decided.request.ts > tally.lastAt) tally.lastAt = decided.request.ts;
}

const evidence = (tally: Tally): PolicySuggestion['evidence'] => ({
  requests: tally.allowed + tally.denied,
  allowed: tally.allowed,
  denied: tally.denied,
  distinct_inputs: tally.inputs.size,
  deciders: [...tally.deciders].sort(),
  examples: tally.examples,
  last_at: tally.lastAt,
});

/**
 * Rules proposed from what people decided (docs/policy.md): an exact request allowed by people at
 * least `minEvidence` times and never denied → `auto_approve`; a family of commands (the same first
 * word) allowed that often over several commands and never denied → `auto_approve` (its exact
 * members are then not proposed again); a family denied in at least 90% of at least `minEvidence`
 * decisions → `deny`. Only people's decisions count: the worker's own lists and the deadline's
 * answers say nothing of what people want. The most-decided first.
 */
export function suggestRules(decided: readonly DecidedRequest[], minEvidence: number): PolicySuggestion[] {
  const exact = new Map<string, Tally>();
  const families = new Map<string, Tally>();
  for (const one of decided) {
    if (!one.person) continue;
    const keys = keysOf(one.request);
    count(exact, keys.exact, one, keys.input);
    if (keys.family) count(families, keys.family, one, keys.input);
  }
  const suggestions: PolicySuggestion[] = [];
  const covered = new Set<string>();
  for (const family of families.values()) {
    const total = family.allowed + family.denied;
    if (total < minEvidence) continue;
    if (family.denied === 0 && family.inputs.size > 1 && family.allowed >= minEvidence) {
      suggestions.push({
        rule: family.rule,
        list: 'auto_approve',
        evidence: evidence(family),
        why: `allowed by people ${family.allowed} times over ${family.inputs.size} commands, never denied`,
      });
      for (const input of family.inputs) covered.add(`${family.rule.slice(0, family.rule.indexOf('('))}(${input})`);
    } else if (family.denied / total >= DENY_SHARE)
      suggestions.push({ rule: family.rule, list: 'deny', evidence: evidence(family), why: `denied by people ${family.denied} of ${total} times` });
  }
  for (const tally of exact.values()) {
    if (covered.has(tally.rule) || tally.denied > 0 || tally.allowed < minEvidence) continue;
    suggestions.push({ rule: tally.rule, list: 'auto_approve', evidence: evidence(tally), why: `allowed by people ${tally.allowed} times, never denied` });
  }
  return suggestions.sort((a, b) => b.evidence.requests - a.evidence.requests || a.rule.localeCompare(b.rule));
}
