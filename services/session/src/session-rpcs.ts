import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import {
  createChecker,
  CreateSessionRpc,
  FollowLogsRpc,
  isEndedStatus,
  ListSessionsRpc,
  ListTemplatesRpc,
  routePrincipals,
  SessionAccessRpc,
  SessionRpc,
  subjects,
  type CreateSessionRpcType,
  type FollowLogsRpcType,
  type ListResponseOf,
  type ListSessionsRpcType,
  type ListTemplatesRpcType,
  type Session,
  type SessionAccessRpcType,
  type SessionRpcType,
  type TemplateSummary,
} from '@svc/protocol';
import { parseGitCredentials, type Logger } from '@svc/service-kit';
import type { Database, Kysely } from '@svc/store';
import type { SessionConfig } from './config.js';
import { recordAudit } from './audit-facts.js';
import { visibleSession } from './session-access.js';
import { followSandboxLogs } from './logs.js';
import type { SandboxProvider } from './sandbox/provider.js';
import type { SessionStore } from './session-store.js';
import { setSessionStatus } from './session-status.js';
import type { Spawner } from './spawn/spawner.js';
import { allocateWorker } from './spawn/steps/allocate-worker.js';
import { validateRequest } from './spawn/steps/validate.js';
import type { TemplateCatalog } from './templates/catalog.js';
import type { WorkerRegistry } from './worker-registry.js';
import { parseForges } from './workspace/forges.js';
import { serveWorkspaceRpcs } from './workspace/workspace-rpcs.js';

export interface SessionRpcDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  config: SessionConfig;
  logger: Logger;
  registry: WorkerRegistry;
  store: SessionStore;
  templates: TemplateCatalog;
  provider: SandboxProvider;
  hostEnv: Readonly<Record<string, string | undefined>>;
  spawner: Spawner;
}

/** The session API's operations on the bus (the gateway's `/v1/sessions`, `/v1/templates` and the workspace's), shared by the replicas. */
export function serveSessionRpcs(deps: SessionRpcDeps): { stop(): void } {
  const { nc } = deps;
  const shared = { logger: deps.logger, queue: 'session' };
  const subscriptions: Subscription[] = [
    serveRpc<CreateSessionRpcType, Session>(nc, subjects.rpc.createSession, (request) => createSession(deps, request), {
      ...shared,
      checker: createChecker(CreateSessionRpc),
    }),
    serveRpc<ListTemplatesRpcType, ListResponseOf<TemplateSummary>>(
      nc,
      subjects.rpc.listTemplates,
      async () => {
        const items = await deps.templates.list();
        return { items, total: items.length };
      },
      { ...shared, checker: createChecker(ListTemplatesRpc) },
    ),
    serveRpc<SessionRpcType, Session>(nc, subjects.rpc.getSession, async (request) => (await visibleSession(deps, request)).session, {
      ...shared,
      checker: createChecker(SessionRpc),
    }),
    serveRpc<ListSessionsRpcType, ListResponseOf<Session>>(nc, subjects.rpc.listSessions, (request) => deps.store.list(request.caller, request), {
      ...shared,
      checker: createChecker(ListSessionsRpc),
    }),
    serveRpc<SessionRpcType, Session>(nc, subjects.rpc.deleteSession, (request) => deleteSession(deps, request), {
      ...shared,
      checker: createChecker(SessionRpc),
    }),
    serveRpc<SessionAccessRpcType, Session>(nc, subjects.rpc.setSessionAccess, (request) => setSessionAccess(deps, request), {
      ...shared,
      checker: createChecker(SessionAccessRpc),
    }),
    serveRpc<FollowLogsRpcType, { follow_id: string }>(nc, subjects.rpc.followLogs, (request) => followLogs(deps, request), {
      ...shared,
      checker: createChecker(FollowLogsRpc),
    }),
    ...serveWorkspaceRpcs({ ...deps, gitCredentials: parseGitCredentials(deps.config.gitCredentials), forges: parseForges(deps.config.gitForges) }),
  ];
  return { stop: () => subscriptions.forEach((subscription) => subscription.unsubscribe()) };
}

/** Steps 1 and 2 of the spawn pipeline before the answer (`201`); the rest runs in the background. */
async function createSession(deps: SessionRpcDeps, { caller, body }: CreateSessionRpcType): Promise<Session> {
  const template = await validateRequest(deps, caller, body);
  const { session, token } = await allocateWorker(deps, caller, template, body);
  recordAudit(deps, {
    id: `session-started:${session.id}`,
    at: session.created_at,
    actor: caller.sub,
    channel: caller.channel ?? 'api',
    action: 'session_started',
    session_id: session.id,
    worker_id: session.worker_id,
    details: { template: template.name },
  });
  deps.spawner.spawn({ sessionId: session.id, workerId: session.worker_id, token, template, body });
  return session;
}

/**
 * Ended first, so the agent's exit on SIGTERM cannot turn it into failed; then nothing the sandbox
 * still sends is accepted, and the sandbox goes.
 */
async function deleteSession(deps: SessionRpcDeps, request: SessionRpcType): Promise<Session> {
  const { registry, store, logger: log } = deps;
  const { session } = await visibleSession(deps, request, 'operator');
  if (!isEndedStatus(session.status)) {
    await setSessionStatus({ registry, store }, { workerId: session.worker_id, sessionId: session.id }, 'stopped');
  }
  await registry.revoke(session.worker_id).catch((err: unknown) => log.warn({ err, session_id: session.id }, 'could not revoke the worker token'));
  const latest = (await store.get(session.id))!;
  if (latest.sandbox) await deps.provider.open(latest.sandbox).destroy(deps.config.killGraceMs);
  log.info({ session_id: session.id, worker_id: session.worker_id }, 'session deleted: sandbox destroyed, token revoked');
  recordAudit(deps, {
    id: `session-stopped:${session.id}`,
    at: new Date().toISOString(),
    actor: request.caller.sub,
    channel: request.caller.channel ?? 'api',
    action: 'session_stopped',
    session_id: session.id,
    worker_id: session.worker_id,
    details: { status: latest.session.status },
  });
  return latest.session;
}

async function followLogs(deps: SessionRpcDeps, request: FollowLogsRpcType): Promise<{ follow_id: string }> {
  const row = await visibleSession(deps, request);
  followSandboxLogs({ nc: deps.nc, sandbox: row.sandbox ? deps.provider.open(row.sandbox) : undefined, request, logger: deps.logger });
  return { follow_id: request.follow_id };
}

/**
 * Replaces a session's access list (its owner's and admins' to do), on its row and its worker's
 * record, which every gateway checks; audited with the list before and after.
 */
async function setSessionAccess(deps: SessionRpcDeps, request: SessionAccessRpcType): Promise<Session> {
  const { session } = await visibleSession(deps, request, 'admin');
  const worker = await deps.registry.setAccess(session.worker_id, request.access);
  const updated = (await deps.store.setAccess(session.id, request.access, routePrincipals(worker.approvals)))!;
  recordAudit(deps, {
    id: `access-changed:${session.id}:${updated.session.updated_at}`,
    at: updated.session.updated_at,
    actor: request.caller.sub,
    channel: request.caller.channel ?? 'api',
    action: 'access_changed',
    session_id: session.id,
    worker_id: session.worker_id,
    details: { before: session.access ?? [], after: request.access },
  });
  return updated.session;
}
