import { actionHash, type AuditChannel, type AuditFacts, type StoredEvent } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { AuditLog } from '@svc/store';

/** Appending a fact is tried this often before it is given up (and logged as lost). */
const ATTEMPTS = 5;
const RETRY_MS = 500;

/**
 * What the control service writes to the audit trail (docs/audit.md): every decision (a person's,
 * with the channel they came through; the deadline's; the sidecar rules'), every rule a person
 * added with "always", and what other services report (sessions started and stopped).
 */
export function createAuditRecorder(log: AuditLog, logger: Logger) {
  const logs = logger.child({ component: 'audit' });

  async function append(facts: AuditFacts): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await log.append(facts);
        return;
      } catch (err) {
        if (attempt >= ATTEMPTS) {
          logs.error({ err, audit_id: facts.id }, 'an audit record could not be written');
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS * attempt));
      }
    }
  }

  return {
    append,

    /** A stored decision on `request`: the decision, and the rule it added with "always". */
    async decision(request: StoredEvent<'control_request'>, decision: StoredEvent<'control_response'>, channel: AuditChannel): Promise<void> {
      const { tool_name: toolName, input } = request.data;
      const { data } = decision;
      const common = {
        at: decision.ts,
        actor: data.decided_by,
        channel,
        worker_id: decision.worker_id,
        request_id: data.request_id,
        decision: data.decision,
        action_hash: await actionHash(toolName, input),
      };
      await append({
        id: `decision:${decision.worker_id}:${data.request_id}`,
        action: 'decision',
        ...common,
        details: { tool_name: toolName, ...(data.scope ? { scope: data.scope } : {}), ...(data.message ? { message: data.message } : {}) },
      });
      if (data.scope === 'always')
        await append({
          id: `rule:${decision.worker_id}:${data.request_id}`,
          action: 'rule_added',
          ...common,
          details: { tool_name: toolName, ...(data.input_pattern ? { input_pattern: data.input_pattern } : {}) },
        });
    },
  };
}

export type AuditRecorder = ReturnType<typeof createAuditRecorder>;
