import { requestJson, type NatsConnection } from '@svc/bus';
import { subjects, type AuditFacts } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';

/** How often a fact is offered to the audit trail before it is given up. */
const AUDIT_ATTEMPTS = 10;

/**
 * Tells the audit trail (the control service's) about what a person did through the session
 * service (a session started or stopped, a push, a pull request); tried a few times in the
 * background (the fact's id makes a repeat harmless), then logged as lost.
 */
export function recordAudit(deps: { nc: NatsConnection; logger: Logger }, facts: AuditFacts, attempt = 1): void {
  requestJson(deps.nc, subjects.rpc.appendAudit, facts).catch((err: unknown) => {
    if (attempt >= AUDIT_ATTEMPTS) return deps.logger.error({ err, audit_id: facts.id }, `${facts.action} could not be recorded in the audit trail`);
    setTimeout(() => recordAudit(deps, facts, attempt + 1), 1000 * attempt).unref();
  });
}
