import { parseRequestRule } from '@svc/protocol';
import type { PermissionLists } from '@svc/protocol';

/** The two Codex sandboxes svc uses (never `danger-full-access`: then Codex asks about nothing). */
type CodexSandbox = 'read-only' | 'workspace-write';

/** What `thread/start` gets: Codex's sandbox and approval policy, and why the sandbox was chosen. */
export interface CodexSettings {
  sandbox: CodexSandbox;
  /**
   * Always `on-request`: Codex asks before it leaves its sandbox (an escalated command) and, in a
   * read-only sandbox, before it applies a patch. (`untrusted` is refused by Codex 0.169, `never`
   * asks nothing.)
   */
  approvalPolicy: 'on-request';
  reason: string;
}

/** The tools svc matches Codex's approval requests as. */
const CODEX_TOOLS = ['command_execution', 'file_change'] as const;

/**
 * Codex's settings from the worker's permission lists, so that whatever the engine must decide
 * reaches it as an approval request. Codex never asks about a command it runs inside its
 * sandbox; in a `workspace-write` sandbox such a command may change the workspace, and patches
 * are applied unasked. So `workspace-write` only when the lists would allow all of that anyway:
 * every file change auto-approved, and no rule that refuses (or, with a person there, asks
 * about) a command or a file change. Otherwise `read-only`: every patch is asked, and a command
 * that changes anything must ask to leave the sandbox.
 */
export function codexSettingsFor(lists: PermissionLists, autonomous: boolean): CodexSettings {
  const everyChangeApproved = lists.auto_approve.map(parseRequestRule).find((rule) => rule.coversEveryCall('file_change'));
  const binding = [...lists.deny, ...(lists.routed ?? []), ...(autonomous ? [] : lists.ask)]
    .map(parseRequestRule)
    .find((rule) => CODEX_TOOLS.some((tool) => rule.namesTool(tool)));
  if (everyChangeApproved && !binding) {
    return {
      sandbox: 'workspace-write',
      approvalPolicy: 'on-request',
      reason: `every file change is auto-approved (${everyChangeApproved.source}) and no rule limits commands or file changes`,
    };
  }
  const why = binding ? `the rule ${binding.source} must be able to refuse` : 'file changes need a decision';
  return {
    sandbox: 'read-only',
    approvalPolicy: 'on-request',
    reason: `${why}: Codex asks about every patch and every command that leaves its read-only sandbox`,
  };
}
