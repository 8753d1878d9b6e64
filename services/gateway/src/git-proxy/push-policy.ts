import { randomUUID } from 'node:crypto';
import { requestJson, type NatsConnection } from '@svc/bus';
import {
  GIT_PUSH_TOOL,
  parseToolRule,
  subjects,
  type EventData,
  type GitPushInput,
  type ListResponseOf,
  type PermissionRule,
  type WorkerRecord,
  type WorkerWorkspace,
  routeOf,
} from '@svc/protocol';
import type { LiveFeeds } from '../live-feeds.js';
import { askPerson, recordPolicyVerdict, type ComponentRecords, type Verdict } from '../raised-requests.js';

/** What the template's `git_push` rules say of a ref: the first list that names it, deny before ask before allow. */
function templateRuleFor(rules: WorkerWorkspace['push_rules'], ref: string): { list: 'deny' | 'ask' | 'auto_approve'; rule: string } | undefined {
  for (const list of ['deny', 'ask', 'auto_approve'] as const) {
    const rule = rules[list].find((text) => {
      const parsed = parseToolRule(text);
      return parsed.namesTool(GIT_PUSH_TOOL) && parsed.matchesInput(ref);
    });
    if (rule) return { list, rule };
  }
  return undefined;
}

/** What the rules people added with "always" for `git_push` say of a ref: the newest that names it. */
function peopleRuleFor(rules: readonly PermissionRule[], ref: string): Verdict | undefined {
  for (const rule of [...rules].reverse()) {
    if (rule.tool_name !== GIT_PUSH_TOOL) continue;
    if (rule.input_pattern !== undefined && !parseToolRule(`${GIT_PUSH_TOOL}(${rule.input_pattern})`).matchesInput(ref)) continue;
    const named = `${GIT_PUSH_TOOL}${rule.input_pattern === undefined ? '' : `(${rule.input_pattern})`}`;
    return {
      allow: rule.decision === 'allow',
      by: rule.added_by,
      reason: `${rule.decision === 'allow' ? 'allowed' : 'denied'} by ${rule.added_by}'s rule ${named}`,
    };
  }
  return undefined;
}

export interface PushPolicy {
  /**
   * Decides one ref of a push, asked as a `git_push` tool call (docs/workspace.md "Pushes"): the
   * template's rules (deny, then ask, then auto_approve), then the rules people added with
   * "always", then the autonomous policy or a person. Every decision is stored with its request.
   */
  decide(worker: WorkerRecord & { workspace: WorkerWorkspace }, input: GitPushInput, gone: AbortSignal): Promise<Verdict>;
}

export function createPushPolicy(deps: { nc: NatsConnection; live: LiveFeeds; records: ComponentRecords }): PushPolicy {
  return {
    async decide(worker, input, gone) {
      const request: EventData<'control_request'> = { request_id: `git_${randomUUID()}`, tool_name: GIT_PUSH_TOOL, input: { ...input } };
      const workerId = worker.worker_id;
      const byTemplate = templateRuleFor(worker.workspace.push_rules, input.ref);
      if (byTemplate?.list === 'deny')
        return recordPolicyVerdict(deps.records, workerId, request, { allow: false, by: 'policy', reason: `denied by the template's rule ${byTemplate.rule}` });
      if (byTemplate?.list === 'auto_approve')
        return recordPolicyVerdict(deps.records, workerId, request, { allow: true, by: 'policy', reason: `allowed by the template's rule ${byTemplate.rule}` });
      // A routed push (docs/teams.md) is the route's people's to decide: no one's "always", no autonomy.
      if (!byTemplate && routeOf(worker.approvals, request)) return askPerson(deps, worker, request, gone);
      if (!byTemplate) {
        const rules = await requestJson<ListResponseOf<PermissionRule>>(deps.nc, subjects.rpc.permissionRules, { worker_id: workerId }, { retries: 1 });
        const byPeople = peopleRuleFor(rules.items, input.ref);
        if (byPeople) return recordPolicyVerdict(deps.records, workerId, request, byPeople);
      }
      if (worker.workspace.autonomous)
        return recordPolicyVerdict(deps.records, workerId, request, { allow: true, by: 'policy', reason: 'autonomous: what is not denied is allowed' });
      return askPerson(deps, worker, request, gone);
    },
  };
}
