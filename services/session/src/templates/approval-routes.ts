import { parseToolRule, quoteRule, ruleLimitProblem, type ApprovalRoute, type FieldError } from '@svc/protocol';
import { jsonObjectSetting } from '@svc/service-kit';

/** Who is in which group, where the deployment says (`SVC_GROUP_MEMBERS`). */
export type GroupMembers = ReadonlyMap<string, readonly string[]>;

/** Reads `SVC_GROUP_MEMBERS`: a JSON object of group → member `sub`s; a malformed one stops the start, naming it. */
export function parseGroupMembers(raw: string | undefined): GroupMembers {
  const parsed = jsonObjectSetting('SVC_GROUP_MEMBERS', raw, 'group → [member, …], {"release": ["bob", "dave"]}');
  const groups = new Map<string, string[]>();
  for (const [group, members] of Object.entries(parsed ?? {})) {
    if (!Array.isArray(members) || !members.every((member) => typeof member === 'string'))
      throw new Error(`SVC_GROUP_MEMBERS: the members of ${group} must be a list of user names`);
    groups.set(group, members as string[]);
  }
  return groups;
}

/** What a template says that decides a request before any route could: its sidecar's lists. */
interface Lists {
  auto_approve: readonly string[];
  deny: readonly string[];
  decision_timeout_s: number;
}

/**
 * Whether `earlier` takes every request `later` would match, as far as their texts show: it names
 * `later`'s tool (as written), and has no pattern, or one whose glob matches `later`'s pattern
 * read as text (`Bash(git *)` takes `Bash(git push*)`; `Bash(git push)` does not take `Bash(git *)`).
 */
function takesEveryRequestOf(earlier: string, later: string): boolean {
  const first = parseToolRule(earlier);
  const second = parseToolRule(later);
  if (!first.namesTool(second.tool)) return false;
  if (first.coversEveryInput) return true;
  return second.pattern !== undefined && first.matchesInput(second.pattern);
}

/**
 * What is wrong with a template's approval routes (docs/teams.md), as field errors: a rule over
 * its caps; a route that can match nothing (an earlier route, or the sidecar's `deny` or
 * `auto_approve` list, takes every request it would match, so nobody is ever asked through it);
 * an escalation without its other half, or after the deadline that ends the wait; a quorum more
 * than the people it can reach, where they are known: `user:` principals count one each, a
 * `group:` its members in `groups` (`SVC_GROUP_MEMBERS`), an unknown group is not counted against it.
 */
export function approvalRouteProblems(routes: readonly ApprovalRoute[], lists: Lists | undefined, groups: GroupMembers): FieldError[] {
  const problems: FieldError[] = [];
  const at = (index: number, key: string, message: string) => problems.push({ field: `/approvals/route/${index}/${key}`, message });
  routes.forEach((route, index) => {
    const capped = ruleLimitProblem(route.match);
    if (capped) return at(index, 'match', `(the rule ${quoteRule(route.match)}) ${capped}`);
    const shadow =
      routes.slice(0, index).find((earlier) => takesEveryRequestOf(earlier.match, route.match))?.match ??
      lists?.deny.find((rule) => takesEveryRequestOf(rule, route.match)) ??
      lists?.auto_approve.find((rule) => takesEveryRequestOf(rule, route.match));
    if (shadow !== undefined)
      at(index, 'match', `(the rule ${quoteRule(route.match)}) matches nothing: every request it would match is taken first by ${quoteRule(shadow)}`);
    if ((route.escalate_after_s === undefined) !== (route.escalate_to === undefined))
      at(index, route.escalate_to ? 'escalate_to' : 'escalate_after_s', 'escalate_after_s and escalate_to go together');
    if (route.escalate_after_s !== undefined && lists && route.escalate_after_s >= lists.decision_timeout_s)
      at(
        index,
        'escalate_after_s',
        `is ${route.escalate_after_s} s, not before the decision deadline (${lists.decision_timeout_s} s): nobody would be offered it`,
      );
    const quorum = route.quorum ?? 1;
    const reachable = peopleOf([...route.to, ...(route.escalate_to ?? [])], groups);
    if (quorum > 1 && reachable.known && quorum > reachable.count)
      at(index, 'quorum', `is ${quorum}, more than the ${reachable.count} people the route can reach`);
  });
  return problems;
}

/** How many different people `principals` name: `known` false when a group's members are not known. */
function peopleOf(principals: readonly string[], groups: GroupMembers): { count: number; known: boolean } {
  const people = new Set<string>();
  let known = true;
  for (const principal of principals) {
    if (principal.startsWith('user:')) people.add(principal.slice('user:'.length));
    else {
      const members = groups.get(principal.slice('group:'.length));
      if (members) members.forEach((member) => people.add(member));
      else known = false;
    }
  }
  return { count: people.size, known };
}
