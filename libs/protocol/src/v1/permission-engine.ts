import type { PermissionRule } from './control-api.js';
import { parseRequestRule, type RequestRule } from './request-rules.js';

/** The config's three lists (the spec's `permissions` object). */
export interface PermissionLists {
  auto_approve: readonly string[];
  deny: readonly string[];
  ask: readonly string[];
  /** The template's approval routes' rules (docs/teams.md): the people a route names decide, always. */
  routed?: readonly string[] | undefined;
}

export type Verdict =
  | { decision: 'allow' | 'deny'; reason: string }
  /** A person decides (the request goes to the control plane). */
  | { decision: 'ask'; reason: string };

/**
 * How an automatic answer names the rule that gave it (docs/teams.md, "Rules"): its pattern, and
 * for a rule beyond this worker its scope and id — `team rule command_execution(npm test) (team:payments, rule 41)`.
 */
function ruleName(rule: PermissionRule): string {
  const source = rule.input_pattern === undefined ? rule.tool_name : `${rule.tool_name}(${rule.input_pattern})`;
  return rule.scope === undefined || rule.scope === 'worker' ? `rule ${source}` : `${rule.scope} rule ${source} (${rule.scope_key}, rule ${rule.rule_id})`;
}

/** A rule a person added with "always" (from `GET …/permission-rules`): its pattern is over the primary input. */
function addedRule(rule: PermissionRule): RequestRule {
  return parseRequestRule(rule.input_pattern === undefined ? rule.tool_name : `${rule.tool_name}(${rule.input_pattern})`);
}

/**
 * The permission engine. Precedence, first match wins:
 * 1. the config's `deny` list (the operator's hard limits: nobody overrides them);
 * 2. an approval route's rule (docs/teams.md): asked, so the people it names decide — no rule
 *    someone added with "always", and no autonomy, answers for them;
 * 3. rules people added with "always" (the latest first);
 * 4. `ask`;
 * 5. `auto_approve`;
 * 6. anything else is `ask`.
 * In autonomous mode nobody is there to ask: `ask` (listed or by default) becomes allow; `deny` still denies.
 */
export function createPermissionEngine(lists: PermissionLists, options: { autonomous: boolean }) {
  const deny = lists.deny.map(parseRequestRule);
  const routed = (lists.routed ?? []).map(parseRequestRule);
  const ask = lists.ask.map(parseRequestRule);
  const approve = lists.auto_approve.map(parseRequestRule);
  /** The rules people added, by rule id: the control plane's list, and any learned from a decision before that list was read again. */
  const addedById = new Map<string, PermissionRule>();
  let added: Array<{ rule: RequestRule; decision: 'allow' | 'deny'; by: string; named: string }> = [];
  const compile = () => {
    added = [...addedById.values()]
      // The latest first: a rule's id is its decision's event id, in the worker's order.
      .sort((a, b) => Number(BigInt(b.rule_id) - BigInt(a.rule_id)))
      .map((rule) => ({ rule: addedRule(rule), decision: rule.decision, by: rule.added_by, named: ruleName(rule) }));
  };

  const asked = (reason: string): Verdict =>
    options.autonomous ? { decision: 'allow', reason: `${reason}; autonomous, so allowed` } : { decision: 'ask', reason };

  return {
    /**
     * The rules added with "always", as the control plane lists them (the sidecar reads them at
     * start and after each such decision). Adds to what it knows: a list read before a rule was
     * stored does not forget the rule learned from its decision.
     */
    setAddedRules(rules: readonly PermissionRule[]): void {
      for (const rule of rules) addedById.set(rule.rule_id, rule);
      compile();
    },

    /** One rule, learned from a person's "always" decision as it arrives: the agent's next request already obeys it. */
    addRule(rule: PermissionRule): void {
      addedById.set(rule.rule_id, rule);
      compile();
    },

    decide(toolName: string, input: Record<string, unknown>): Verdict {
      // A change to many files: any path a rule refuses or asks about is enough; an allowing rule must cover every path.
      const denied = deny.find((rule) => rule.matches(toolName, input, 'some'));
      if (denied) return { decision: 'deny', reason: `denied by the rule ${denied.source}` };
      const route = routed.find((rule) => rule.matches(toolName, input, 'some'));
      if (route) return { decision: 'ask', reason: `routed by the rule ${route.source}: the people it names decide` };
      const person = added.find((entry) => entry.rule.matches(toolName, input, entry.decision === 'allow' ? 'every' : 'some'));
      if (person) return { decision: person.decision, reason: `${person.decision === 'allow' ? 'allowed' : 'denied'} by ${person.by}'s ${person.named}` };
      const listed = ask.find((rule) => rule.matches(toolName, input, 'some'));
      if (listed) return asked(`the rule ${listed.source} asks`);
      const approved = approve.find((rule) => rule.matches(toolName, input, 'every'));
      if (approved) return { decision: 'allow', reason: `auto-approved by the rule ${approved.source}` };
      return asked(`${toolName} is in no list`);
    },
  };
}

export type PermissionEngine = ReturnType<typeof createPermissionEngine>;
