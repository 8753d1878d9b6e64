import type { PermissionRule } from '@svc/protocol';
import type { Database, Kysely } from '@svc/store';

/** The control service's own table: the rules people added with scope "always". */
export function createPermissionRules(db: Kysely<Database>) {
  return {
    async listRules(workerId: string): Promise<PermissionRule[]> {
      const rows = await db.selectFrom('permission_rules').selectAll().where('worker_id', '=', workerId).orderBy('rule_id').execute();
      return rows.map((row) => ({
        rule_id: row.rule_id,
        tool_name: row.tool_name,
        ...(row.input_pattern === null ? {} : { input_pattern: row.input_pattern }),
        decision: row.decision,
        added_by: row.added_by,
        request_id: row.request_id,
        added_at: row.added_at.toISOString(),
      }));
    },
  };
}

export type PermissionRules = ReturnType<typeof createPermissionRules>;
