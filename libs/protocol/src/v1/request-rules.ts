import { parseToolRule } from './rules.js';

/*
 * Rules over a tool request (its tool and input), as the sidecar's permission engine and the
 * control service's approval routes (docs/teams.md) match them.
 */

/**
 * The input a rule's argument pattern is matched against: `Bash(git *)` matches the command,
 * `Write(src/*)` the file path, `git_push(refs/heads/*)` the ref, `network(*.internal:443)` the
 * `host:port` asked for. A tool without one of these fields matches only argument-less rules.
 */
const PRIMARY_INPUT_FIELDS = ['command', 'file_path', 'path', 'notebook_path', 'url', 'pattern', 'query', 'ref', 'target'] as const;

/**
 * What a rule's argument pattern is matched against: one value (the primary input field), or
 * several for a change to many files (Codex's `file_change`: `{changes: [{path}, …]}`), where an
 * allowing rule must match every path and a refusing one any.
 */
export function primaryInputs(input: Record<string, unknown>): string[] | undefined {
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
export interface RequestRule {
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
export function parseRequestRule(source: string): RequestRule {
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
