import { randomBytes } from 'node:crypto';
import { createIncomingEventPublisher, requestJson, serveHealth, serveRpc, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  componentSource,
  createChecker,
  CreateSessionRpc,
  FollowLogsRpc,
  isEndedStatus,
  ListSessionsRpc,
  ListTemplatesRpc,
  SessionRpc,
  subjects,
  type AuditFacts,
  type CreateSessionRpcType,
  type FollowLogsRpcType,
  type ListResponseOf,
  type ListSessionsRpcType,
  type ListTemplatesRpcType,
  type TemplateSummary,
  type Session,
  type SessionRpcType,
} from '@svc/protocol';
import type { Logger, RunningService } from '@svc/service-kit';
import { prepareTables, type StoreUse, pingDatabase, type Database, type Kysely } from '@svc/store';
import type { SessionConfig } from './config.js';
import { startLifecycle } from './lifecycle.js';
import { followSandboxLogs } from './logs.js';
import { createKubernetesProvider, loadKubeConfig } from './sandbox/kubernetes.js';
import { createLocalProvider } from './sandbox/local.js';
import { startRetention } from './retention.js';
import type { SandboxProvider } from './sandbox/provider.js';
import { createSessionStore } from './session-store.js';
import { checkSessionCap, confirmSessionCap } from './session-caps.js';
import { reportWorkerCounts } from './metrics.js';
import { egressPolicyOf, modelAccessOf, runSpawn, SANDBOX_TARGET, validateSpawn, type SpawnDeps } from './spawn/pipeline.js';
import { createTemplateCatalog } from './templates/catalog.js';
import { checkOverrides } from './templates/overrides.js';
import { setSessionStatus } from './session-status.js';
import { createWorkerRegistry, LIVENESS_WRITE_INTERVAL_MS, serveWorkerRegistry } from './worker-registry.js';

export { sessionSettings, CHECKOUT_SIDECAR_BINARY, type SessionConfig } from './config.js';
export { parseTemplate, type Template } from './templates/template.js';
export { bubblewrapAvailable } from './sandbox/local.js';

export interface SessionDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
  config: SessionConfig;
  /** The sandbox provider (default: from `config.sandboxProvider`). */
  provider?: SandboxProvider;
  /** Where `pass_env` values come from (default: this process's environment). */
  hostEnv?: Readonly<Record<string, string | undefined>>;
  /** The clock of the retention sweep (tests move it forward). */
  now?: () => number;
}

/** How often a replica says a spawn it runs is still under way. */
const SPAWN_HEARTBEAT_MS = 5_000;
/** A spawn silent this long lost its replica (killed, or cut off from the store): it is failed. */
const SPAWN_SILENT_MS = 20_000;

/** The store's tables this service needs: it owns the sessions table. */
/** How often a session started or stopped is offered to the audit trail before it is given up. */
const AUDIT_ATTEMPTS = 10;

export const tables: StoreUse = { owns: 'sessions' };

/**
 * Starts the session service: the session API's operations, the spawn pipeline, worker
 * lifecycle (agent exits, sidecar liveness), sandbox logs, and the worker registry.
 */
export async function start(deps: SessionDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'session' });
  const { config } = deps;
  const applied = await prepareTables(deps.db, tables);
  if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
  const provider = deps.provider ?? createProvider(config, log);
  const registry = await createWorkerRegistry(deps.nc, log);
  const store = createSessionStore(deps.db);
  const stopCounting = reportWorkerCounts(() => store.countByStatus());
  const templates = createTemplateCatalog({ dir: config.templatesDir });
  const publisher = createIncomingEventPublisher(deps.nc, componentSource('spawn'));
  const hostEnv = deps.hostEnv ?? process.env;

  // A live sidecar polls at least every decision wait; its liveness is written at most every
  // write interval. Both stay well under the deadline, so only a silent sidecar is lost.
  const livenessWriteIntervalMs = Math.min(LIVENESS_WRITE_INTERVAL_MS, Math.floor(config.sidecarLostAfterMs / 4));
  const spawnDeps: SpawnDeps = {
    provider,
    registry,
    store,
    sidecarBinaries: { [SANDBOX_TARGET]: config.sidecarBinary },
    controlPlaneUrl: config.sandboxControlPlaneUrl.replace(/\/+$/, ''),
    decisionWaitMs: Math.min(25_000, Math.floor(config.sidecarLostAfterMs / 4)),
    hostEnv,
    killGraceMs: config.killGraceMs,
    sandboxPath: config.sandboxPath,
    logger: log,
    async emit(workerId, uid, data) {
      await publisher.publish(workerId, { type: 'system', uid, ts: new Date().toISOString(), data });
    },
  };
  const spawning = new Set<Promise<void>>();
  const stopping = new AbortController();
  const lifecycle = await startLifecycle({
    nc: deps.nc,
    registry,
    store,
    provider,
    logger: log,
    sidecarLostAfterMs: config.sidecarLostAfterMs,
    spawnTimeoutMs: 10 * 60_000,
    spawnSilentMs: SPAWN_SILENT_MS,
    watchdogIntervalMs: Math.min(5000, Math.floor(config.sidecarLostAfterMs / 4)),
    killGraceMs: config.killGraceMs,
  });

  const retention = startRetention({
    nc: deps.nc,
    store,
    workers: registry,
    logger: log,
    defaultDays: config.eventRetentionDays,
    intervalMs: config.retentionSweepIntervalMs,
    ...(deps.now ? { now: deps.now } : {}),
  });

  const visibleSession = async (request: SessionRpcType) => {
    const row = await store.get(request.session_id, request.viewer);
    if (!row) throw new CodedError('session_not_found', `session ${request.session_id} does not exist`);
    return row;
  };

  /**
   * Tells the audit trail (the control service's) about a session started or stopped; tried a
   * few times in the background (the fact's id makes a repeat harmless), then logged as lost.
   */
  const recordAudit = (facts: AuditFacts, attempt = 1): void => {
    requestJson(deps.nc, subjects.rpc.appendAudit, facts).catch((err: unknown) => {
      if (attempt >= AUDIT_ATTEMPTS) return log.error({ err, audit_id: facts.id }, 'a session could not be recorded in the audit trail');
      setTimeout(() => recordAudit(facts, attempt + 1), 1000 * attempt).unref();
    });
  };

  const queue = 'session';
  const rpcs = [
    serveRpc<CreateSessionRpcType, Session>(
      deps.nc,
      subjects.rpc.createSession,
      async ({ viewer, body }) => {
        // 1 validate: nothing is made for a request or template that cannot spawn, or past the person's cap.
        await checkSessionCap(deps.db, viewer, config.maxRunningSessionsPerUser);
        const template = await templates.load(body.template);
        checkOverrides(template, body, viewer);
        validateSpawn(template, body, hostEnv, { seals: provider.seals, allowUnsealed: config.sandboxAllowUnsealed });
        // 2 allocate the worker id and token.
        const sessionId = `ses_${randomBytes(12).toString('base64url')}`;
        const decisionPolicy = template.sidecar
          ? { decision_timeout_s: template.sidecar.decision_timeout_s, on_timeout: template.sidecar.on_timeout }
          : undefined;
        const model = modelAccessOf(template, body);
        const egress = egressPolicyOf(template, body);
        const worker = await registry.create({
          owner: viewer.sub,
          session_id: sessionId,
          ...(decisionPolicy ? { decision_policy: decisionPolicy } : {}),
          ...(model ? { model } : {}),
          ...(egress ? { egress } : {}),
        });
        const row = await store.insert({
          id: sessionId,
          worker_id: worker.worker_id,
          owner: viewer.sub,
          template: template.name,
          has_sidecar: template.sidecar !== undefined,
          events_retention_days: template.retention?.events_days,
        });
        await confirmSessionCap({ db: deps.db, registry }, viewer, { workerId: worker.worker_id, sessionId }, config.maxRunningSessionsPerUser);
        log.info({ session_id: sessionId, worker_id: worker.worker_id, template: template.name, owner: viewer.sub }, 'session created');
        recordAudit({
          id: `session-started:${sessionId}`,
          at: row.session.created_at,
          actor: viewer.sub,
          channel: viewer.channel ?? 'api',
          action: 'session_started',
          session_id: sessionId,
          worker_id: worker.worker_id,
          details: { template: template.name },
        });
        const spawn = runSpawn(spawnDeps, { sessionId, workerId: worker.worker_id, token: worker.token, template, body, stopping: stopping.signal });
        spawning.add(spawn);
        // While this replica spawns it, the session says so: if the replica dies, the watchdog
        // of another (or of this one, restarted) sees the spawn fall silent and fails it.
        const heartbeat = setInterval(() => void store.touchSpawn(sessionId).catch(() => {}), SPAWN_HEARTBEAT_MS);
        void spawn.finally(() => {
          clearInterval(heartbeat);
          spawning.delete(spawn);
        });
        return row.session;
      },
      { logger: log, queue, checker: createChecker(CreateSessionRpc) },
    ),
    serveRpc<ListTemplatesRpcType, ListResponseOf<TemplateSummary>>(
      deps.nc,
      subjects.rpc.listTemplates,
      async () => {
        const items = await templates.list();
        return { items, total: items.length };
      },
      { logger: log, queue, checker: createChecker(ListTemplatesRpc) },
    ),
    serveRpc<SessionRpcType, Session>(deps.nc, subjects.rpc.getSession, async (request) => (await visibleSession(request)).session, {
      logger: log,
      queue,
      checker: createChecker(SessionRpc),
    }),
    serveRpc<ListSessionsRpcType, ListResponseOf<Session>>(deps.nc, subjects.rpc.listSessions, (request) => store.list(request.viewer, request), {
      logger: log,
      queue,
      checker: createChecker(ListSessionsRpc),
    }),
    serveRpc<SessionRpcType, Session>(
      deps.nc,
      subjects.rpc.deleteSession,
      async (request) => {
        const row = await visibleSession(request);
        const { session } = row;
        // Ended first, so the agent's exit on SIGTERM cannot turn it into failed; then nothing
        // the sandbox still sends is accepted, and the sandbox goes.
        if (!isEndedStatus(session.status)) {
          await setSessionStatus({ registry, store }, { workerId: session.worker_id, sessionId: session.id }, 'stopped');
        }
        await registry.revoke(session.worker_id).catch((err: unknown) => log.warn({ err, session_id: session.id }, 'could not revoke the worker token'));
        const latest = (await store.get(session.id))!;
        if (latest.sandbox) await provider.open(latest.sandbox).destroy(config.killGraceMs);
        log.info({ session_id: session.id, worker_id: session.worker_id }, 'session deleted: sandbox destroyed, token revoked');
        recordAudit({
          id: `session-stopped:${session.id}`,
          at: new Date().toISOString(),
          actor: request.viewer.sub,
          channel: request.viewer.channel ?? 'api',
          action: 'session_stopped',
          session_id: session.id,
          worker_id: session.worker_id,
          details: { status: latest.session.status },
        });
        return latest.session;
      },
      { logger: log, queue, checker: createChecker(SessionRpc) },
    ),
    serveRpc<FollowLogsRpcType, { follow_id: string }>(
      deps.nc,
      subjects.rpc.followLogs,
      async (request) => {
        const row = await visibleSession(request);
        followSandboxLogs({ nc: deps.nc, sandbox: row.sandbox ? provider.open(row.sandbox) : undefined, request, logger: log });
        return { follow_id: request.follow_id };
      },
      { logger: log, queue, checker: createChecker(FollowLogsRpc) },
    ),
  ];
  const registryRpcs = serveWorkerRegistry(deps.nc, registry, log, { livenessWriteIntervalMs });
  const health = serveHealth(deps.nc, 'session', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  if (!provider.seals) {
    log.warn(
      config.sandboxAllowUnsealed
        ? "sandboxes cannot be sealed here and SVC_SANDBOX_ALLOW_UNSEALED=true: agents run with this machine's network and can reach NATS, the store and every service on it"
        : "sandboxes cannot be sealed here: templates that ask for a sealed sandbox (the default) are refused; install bubblewrap, or set SVC_SANDBOX_ALLOW_UNSEALED=true to accept agents with this machine's network",
    );
  }
  log.info({ provider: provider.name, templatesDir: config.templatesDir ?? null }, 'session service started');
  return {
    async stop() {
      stopCounting();
      health.unsubscribe();
      for (const rpc of rpcs) rpc.unsubscribe();
      registryRpcs.stop();
      retention.stop();
      stopping.abort();
      await Promise.allSettled([...spawning]);
      await lifecycle.stop();
      await provider.close(config.killGraceMs);
      publisher.close();
    },
  };
}

function createProvider(config: SessionConfig, log: Logger): SandboxProvider {
  if (config.sandboxProvider === 'kubernetes') {
    return createKubernetesProvider({
      kubeConfig: loadKubeConfig(config.kubeconfig),
      namespace: config.sandboxNamespace,
      defaultImage: config.sandboxImage,
      logger: log,
    });
  }
  const gateway = new URL(config.sandboxControlPlaneUrl);
  return createLocalProvider({
    dir: config.sandboxesDir,
    isolation: config.sandboxIsolation,
    hostDirs: config.sandboxHostDirs,
    secretDirs: [config.stateDir],
    gateway: { host: gateway.hostname, port: Number(gateway.port || (gateway.protocol === 'https:' ? 443 : 80)) },
    logger: log,
  });
}
