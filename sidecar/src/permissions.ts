import { parseToolRule, type PermissionRule } from '@svc/protocol';

/** The config's three lists (the spec's `permissions` object). */
export interface PermissionLists {
  auto_approve: readonly string[];
  deny: readonly string[];
  ask: readonly string[];
}

export type Verdict =
  | { decision: 'allow' | 'deny'; reason: string }
  /** A person decides (the request goes to the control plane). */
  | { decision: 'ask'; reason: string };

/**
 * The input a rule's argument pattern is matched against: `Bash(git *)` matches the command,
 * `Write(src/*)` the file path. A tool without one of these fields matches only argument-less rules.
 */
const PRIMARY_INPUT_FIELDS = ['command', 'file_path', 'path', 'notebook_path', 'url', 'pattern', 'query'] as const;

/**
 * What a rule's argument pattern is matched against: one value (the primary input field), or
 * several for a change to many files (Codex's `file_change`: `{changes: [{path}, …]}`), where an
 * allowing rule must match every path and a refusing one any.
 */
function primaryInputs(input: Record<string, unknown>): string[] | undefined {
  if (Array.isArray(input['changes'])) {
    const paths = input['changes'].flatMap((change) =>
      typeof change === 'object' && change !== null && typeof (change as { path?: unknown }).path === 'string' ? [(change as { path: string }).path] : [],
    );
    return paths.length > 0 ? paths : undefined;
  }
  for (const field of PRIMARY_INPUT_FIELDS) if (typeof input[field] === 'string') return [input[field]];
  return undefined;
}

/** How a rule's pattern must hold over several inputs: `every` to allow, `some` to refuse or ask. */
type MatchMode = 'every' | 'some';

/** One rule: `Tool`, `mcp__github__*` (a glob over the name), or `Tool(pattern)` (a glob over its primary input). */
export interface Rule {
  source: string;
  matches(toolName: string, input: Record<string, unknown>, mode?: MatchMode): boolean;
  /** Whether the rule is about this tool at all (its name glob matches, whatever its pattern). */
  namesTool(toolName: string): boolean;
  /** Whether it matches every call of this tool: no pattern, or one of only `*`. */
  coversEveryCall(toolName: string): boolean;
}

/**
 * The protocol's one rule parser and linear matcher (`parseToolRule`): `*` any run of
 * characters (spaces and slashes too), `?` one character; the whole text must match.
 */
export function parseRule(source: string): Rule {
  const rule = parseToolRule(source);
  return {
    source,
    namesTool: (toolName) => rule.namesTool(toolName),
    coversEveryCall: (toolName) => rule.coversEveryInput && rule.namesTool(toolName),
    matches(toolName, input, mode = 'some') {
      if (!rule.namesTool(toolName)) return false;
      if (rule.pattern === undefined) return true;
      const values = primaryInputs(input);
      return values !== undefined && values[mode]((value) => rule.matchesInput(value));
    },
  };
}

/** A rule a person added with "always" (from `GET …/permission-rules`): its pattern is over the primary input. */
function addedRule(rule: PermissionRule): Rule {
  return parseRule(rule.input_pattern === undefined ? rule.tool_name : `${rule.tool_name}(${rule.input_pattern})`);
}

/**
 * The permission engine. Precedence, first match wins:
 * 1. the config's `deny` list (the operator's hard limits: nobody overrides them);
 * 2. rules people added with "always" (the latest first);
 * 3. `ask`;
 * 4. `auto_approve`;
 * 5. anything else is `ask`.
 * In autonomous mode nobody is there to ask: `ask` (listed or by default) becomes allow; `deny` still denies.
 */
export function createPermissionEngine(lists: PermissionLists, options: { autonomous: boolean }) {
  const deny = lists.deny.map(parseRule);
  const ask = lists.ask.map(parseRule);
  const approve = lists.auto_approve.map(parseRule);
  /** The rules people added, by rule id: the control plane's list, and any learned from a decision before that list was read again. */
  const addedById = new Map<string, PermissionRule>();
  let added: Array<{ rule: Rule; decision: 'allow' | 'deny'; by: string }> = [];
  const compile = () => {
    added = [...addedById.values()]
      // The latest first: a rule's id is its decision's event id, in the worker's order.
      .sort((a, b) => Number(BigInt(b.rule_id) - BigInt(a.rule_id)))
      .map((rule) => ({ rule: addedRule(rule), decision: rule.decision, by: rule.added_by }));
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
      const person = added.find((entry) => entry.rule.matches(toolName, input, entry.decision === 'allow' ? 'every' : 'some'));
      if (person)
        return { decision: person.decision, reason: `${person.decision === 'allow' ? 'allowed' : 'denied'} by ${person.by}'s rule ${person.rule.source}` };
      const listed = ask.find((rule) => rule.matches(toolName, input, 'some'));
      if (listed) return asked(`the rule ${listed.source} asks`);
      const approved = approve.find((rule) => rule.matches(toolName, input, 'every'));
      if (approved) return { decision: 'allow', reason: `auto-approved by the rule ${approved.source}` };
      return asked(`${toolName} is in no list`);
    },
  };
}

export type PermissionEngine = ReturnType<typeof createPermissionEngine>;
