import type { WorkerDirectory } from '@svc/auth';
import { CodedError, workerRoleOf, type ListResponseOf, type ListRulesRpcType, type PermissionRule, type RevokeRuleRpcType } from '@svc/protocol';
import { sql, type Database, type Kysely, type RuleLog } from '@svc/store';
import type { AuditRecorder } from '../audit.js';
import { mayRevoke, ruleKeysOf, seesRule } from './rule-scopes.js';

/** The most rules one listing reads (the newest). */
const RULES_READ = 2000;

/**
 * The rules people added with "always", across every scope (docs/teams.md, "Rules"): a worker's
 * (for its sidecar), everyone's they may see (`GET /v1/rules`, searchable), and their revocation
 * (`DELETE /v1/rules/{id}`, audited as `rule_revoked`).
 */
export function createRules(deps: {
  db: Kysely<Database>;
  requests: Pick<RuleLog, 'permissionRules' | 'allRules' | 'ruleById'>;
  workers: Pick<WorkerDirectory, 'get'>;
  audit: Pick<AuditRecorder, 'append'>;
}) {
  return {
    /** Every rule that applies to a worker: its own, its session's, template's and teams'. */
    async ofWorker(workerId: string): Promise<ListResponseOf<PermissionRule>> {
      const items = await deps.requests.permissionRules(workerId, ruleKeysOf(await deps.workers.get(workerId)));
      return { items, total: items.length };
    },

    async list({ person, query }: ListRulesRpcType): Promise<ListResponseOf<PermissionRule>> {
      const seen = new Map<string, boolean>();
      const rules = await deps.requests.allRules(RULES_READ);
      for (const workerId of new Set(rules.map((rule) => rule.worker_id!))) {
        const worker = await deps.workers.get(workerId);
        seen.set(workerId, worker !== undefined && workerRoleOf(person, worker) !== undefined);
      }
      const text = query.q?.toLowerCase();
      const items = rules.filter(
        (rule) =>
          seesRule(person, rule, (workerId) => seen.get(workerId) === true) &&
          (query.scope === undefined || rule.scope === query.scope) &&
          (query.tool === undefined || rule.tool_name === query.tool) &&
          (query.worker_id === undefined || rule.worker_id === query.worker_id) &&
          (text === undefined ||
            [rule.tool_name, rule.input_pattern ?? '', rule.added_by, rule.scope_key ?? '', rule.scope ?? ''].some((field) =>
              field.toLowerCase().includes(text),
            )),
      );
      return { items, total: items.length };
    },

    async revoke({ person, rule_id: ruleId, channel }: RevokeRuleRpcType): Promise<{ revoked: true; rule: PermissionRule }> {
      const found = await deps.requests.ruleById(ruleId);
      const worker = found?.worker_id ? await deps.workers.get(found.worker_id) : undefined;
      const visible = found && seesRule(person, found, () => worker !== undefined && workerRoleOf(person, worker) !== undefined);
      if (!found || !visible) throw new CodedError('not_found', `no rule ${ruleId}`);
      const { revoked, ...rule } = found;
      if (!mayRevoke(person, rule, worker))
        throw new CodedError(
          'forbidden',
          `rule ${ruleId} (${rule.scope} rule by ${rule.added_by}) may be revoked by who added it, an admin, or for its scope an ${rule.scope === 'template' ? 'operator' : 'approver'}`,
        );
      if (revoked) return { revoked: true, rule };
      const at = new Date();
      await sql`INSERT INTO rule_revocations (rule_id, revoked_by, revoked_at) VALUES (${ruleId}, ${person.sub}, ${at}) ON CONFLICT DO NOTHING`.execute(
        deps.db,
      );
      await deps.audit.append({
        id: `rule-revoked:${ruleId}`,
        at: at.toISOString(),
        actor: person.sub,
        channel: channel === 'cli' || channel === 'console' ? channel : 'api',
        action: 'rule_revoked',
        ...(rule.worker_id ? { worker_id: rule.worker_id } : {}),
        request_id: rule.request_id,
        details: {
          rule_id: ruleId,
          tool_name: rule.tool_name,
          ...(rule.input_pattern ? { input_pattern: rule.input_pattern } : {}),
          scope: rule.scope,
          scope_key: rule.scope_key,
        },
      });
      return { revoked: true, rule };
    },
  };
}

export type Rules = ReturnType<typeof createRules>;
