import { randomBytes } from 'node:crypto';
import { routePrincipals, type AccessEntry, type CreateSessionBodyType, type Session, type CallerType } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { Database, Kysely } from '@svc/store';
import type { SessionConfig } from '../../config.js';
import { confirmSessionCap } from '../../session-caps.js';
import type { SessionStore } from '../../session-store.js';
import type { Template } from '../../templates/template.js';
import type { WorkerRegistry } from '../../worker-registry.js';
import type { SpawnContext } from '../spawn-step.js';
import { reportStep } from '../step-events.js';
import { egressPolicyOf, modelAccessOf, workspaceOf } from '../worker-policy.js';

export interface AllocateDeps {
  db: Kysely<Database>;
  config: Pick<SessionConfig, 'maxRunningSessionsPerUser'>;
  registry: WorkerRegistry;
  store: SessionStore;
  logger: Logger;
}

/**
 * Step 2, while the session is asked for: the session id, the worker (its token, and the record
 * the gateways enforce: decision deadline, model access, egress policy) and the session's row.
 * A person past their cap after all (a burst of creates) is refused here, the session failed.
 */
export async function allocateWorker(
  deps: AllocateDeps,
  caller: CallerType,
  template: Template,
  body: CreateSessionBodyType,
): Promise<{ session: Session; token: string }> {
  const sessionId = `ses_${randomBytes(12).toString('base64url')}`;
  const decisionPolicy = template.sidecar ? { decision_timeout_s: template.sidecar.decision_timeout_s, on_timeout: template.sidecar.on_timeout } : undefined;
  const model = modelAccessOf(template, body);
  const egress = egressPolicyOf(template, body);
  const workspace = workspaceOf(template, body, sessionId);
  const access = accessOf(template.access, body.access);
  const worker = await deps.registry.create({
    owner: caller.sub,
    ...(access.length > 0 ? { access } : {}),
    ...(template.approvals.route.length > 0 ? { approvals: template.approvals.route } : {}),
    template: template.name,
    ...(caller.groups.length > 0 ? { teams: caller.groups } : {}),
    session_id: sessionId,
    ...(decisionPolicy ? { decision_policy: decisionPolicy } : {}),
    ...(model ? { model } : {}),
    ...(egress ? { egress } : {}),
    ...(workspace ? { workspace } : {}),
    mode: template.session.mode,
    ...(template.session.mode === 'conversation' ? { keep_sandbox_s: template.session.keep_sandbox_s } : {}),
  });
  const row = await deps.store.insert({
    id: sessionId,
    worker_id: worker.worker_id,
    owner: caller.sub,
    template: template.name,
    has_sidecar: template.sidecar !== undefined,
    events_retention_days: template.retention?.events_days,
    access,
    routePrincipals: routePrincipals(template.approvals.route),
  });
  const ids = { workerId: worker.worker_id, sessionId };
  await confirmSessionCap({ db: deps.db, registry: deps.registry }, caller, ids, deps.config.maxRunningSessionsPerUser);
  deps.logger.info({ session_id: sessionId, worker_id: worker.worker_id, template: template.name, owner: caller.sub }, 'session created');
  return { session: row.session, token: worker.token };
}

/** A session's access list: the template's, then the request's (an entry for the same principal replacing the template's). */
function accessOf(fromTemplate: readonly AccessEntry[], fromRequest: readonly AccessEntry[] = []): AccessEntry[] {
  const byPrincipal = new Map<string, AccessEntry>();
  for (const entry of [...fromTemplate, ...fromRequest]) byPrincipal.set(entry.principal, entry);
  return [...byPrincipal.values()];
}

/** Step 2's event, once the spawn runs. */
export async function reportAllocated(spawn: SpawnContext): Promise<void> {
  await reportStep(spawn, { number: '2', name: 'allocate_worker' }, Date.now(), 'done', { worker_id: spawn.ids.workerId, session_id: spawn.ids.sessionId });
}
