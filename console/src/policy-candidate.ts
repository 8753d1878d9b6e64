import { quoteRule, ruleLimitProblem, type PolicyReplay, type PolicyReplayBodyType } from '@svc/protocol';

/** The lists of a template's `[sidecar]` table a candidate policy is written in (docs/policy.md). */
export const CANDIDATE_LISTS = ['auto_approve', 'deny', 'ask'] as const;
export type CandidateList = (typeof CANDIDATE_LISTS)[number];

/** A candidate as the page edits it: each list's text, one rule a line. */
export type CandidateText = Record<CandidateList, string>;

export const EMPTY_CANDIDATE: CandidateText = { auto_approve: '', deny: '', ask: '' };

/** The most rules a list of the replay's candidate may hold (the contract's `maxItems`, libs/protocol/src/v1/policy.ts). */
const LIST_MAX_RULES = 500;

/** A list's rules: its lines, trimmed, the empty ones dropped. */
export function rulesOf(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The candidate with `rule` on a line of its own at the end of `list`; unchanged when the list has it already. */
export function withRule(candidate: CandidateText, list: CandidateList, rule: string): CandidateText {
  if (rulesOf(candidate[list]).includes(rule)) return candidate;
  const kept = candidate[list].replace(/\s+$/, '');
  return { ...candidate, [list]: kept === '' ? rule : `${kept}\n${rule}` };
}

/** The candidate as the replay takes it, or what is wrong with it, naming the list and the line. */
export function candidatePolicy(candidate: CandidateText): { policy: PolicyReplayBodyType['policy'] } | { problem: string } {
  const policy: Record<CandidateList, string[]> = { auto_approve: [], deny: [], ask: [] };
  for (const list of CANDIDATE_LISTS) {
    for (const [index, line] of candidate[list].split('\n').entries()) {
      const rule = line.trim();
      if (rule === '') continue;
      const problem = ruleLimitProblem(rule);
      if (problem !== undefined) return { problem: `${list}, line ${index + 1}: the rule ${quoteRule(rule)} ${problem}.` };
      policy[list].push(rule);
    }
    if (policy[list].length > LIST_MAX_RULES) return { problem: `${list} has ${policy[list].length} rules; a list may have at most ${LIST_MAX_RULES}.` };
  }
  return { policy };
}

/** The candidate's lists as a template's `[sidecar]` table has them (a JSON string is a TOML basic string). */
export function candidateToml(candidate: CandidateText): string {
  const lines = CANDIDATE_LISTS.map((list) => [list, rulesOf(candidate[list])] as const)
    .filter(([, rules]) => rules.length > 0)
    .map(([list, rules]) => `${list} = [${rules.map((rule) => JSON.stringify(rule)).join(', ')}]`);
  return ['[sidecar]', ...lines].join('\n');
}

type ReplayItem = PolicyReplay['items'][number];

/** Whether the candidate decides a request otherwise than the person who decided it did (allowing what they denied, or the reverse). */
export function isDisagreement(item: ReplayItem): boolean {
  const { outcome } = item.people;
  return (outcome === 'allow' || outcome === 'deny') && item.policy.decision !== 'ask' && item.policy.decision !== outcome;
}

/** What was done with a request then, in words. */
export function peopleText(people: ReplayItem['people']): string {
  switch (people.outcome) {
    case 'allow':
      return `allowed by ${people.decided_by ?? 'a person'}`;
    case 'deny':
      return `denied by ${people.decided_by ?? 'a person'}`;
    case 'policy_allow':
      return "allowed by the worker's policy";
    case 'policy_deny':
      return "denied by the worker's policy";
    case 'timeout_allow':
      return 'allowed at its deadline, nobody having decided';
    case 'timeout_deny':
      return 'denied at its deadline, nobody having decided';
    case 'open':
      return 'not decided yet';
  }
}

/** What the candidate would do, in words. */
export const VERDICT_WORDS: Record<ReplayItem['policy']['decision'], string> = { allow: 'would allow', deny: 'would deny', ask: 'would ask' };
