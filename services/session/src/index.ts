import { createIncomingEventPublisher, serveHealth, type NatsConnection } from '@svc/bus';
import { componentSource } from '@svc/protocol';
import type { Logger, RunningService } from '@svc/service-kit';
import { prepareTables, type StoreUse, pingDatabase, type Database, type Kysely } from '@svc/store';
import type { SessionConfig } from './config.js';
import { lifecycleTimingOf, startLifecycle } from './lifecycle.js';
import { reportWorkerCounts } from './metrics.js';
import { startRetention } from './retention.js';
import { createKubernetesProvider, loadKubeConfig } from './sandbox/kubernetes.js';
import { createLocalProvider } from './sandbox/local.js';
import type { SandboxProvider } from './sandbox/provider.js';
import { serveSessionRpcs } from './session-rpcs.js';
import { createSessionStore } from './session-store.js';
import { createSpawner, spawnSettingsOf } from './spawn/spawner.js';
import { createTemplateCatalog } from './templates/catalog.js';
import { createWorkerRegistry, livenessWriteIntervalOf, serveWorkerRegistry } from './worker-registry.js';
import { parseGroupMembers } from './templates/approval-routes.js';

export { sessionSettings, CHECKOUT_SIDECAR_BINARY, type SessionConfig } from './config.js';

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

/** The store's tables this service needs: it owns the sessions table. */
export const tables: StoreUse = { owns: 'session' };

/**
 * Starts the session service: the session API's operations, the spawn pipeline, worker
 * lifecycle (agent exits, sidecar liveness), sandbox logs, and the worker registry.
 */
export async function start(deps: SessionDeps): Promise<RunningService> {
  const { nc, db, config } = deps;
  const log = deps.logger.child({ service: 'session' });
  const applied = await prepareTables(db, tables);
  if (applied.length > 0) log.info({ migrations: applied }, 'applied migrations');
  const provider = deps.provider ?? createProvider(config, log);
  const registry = await createWorkerRegistry(nc, log);
  const store = createSessionStore(db);
  const stopCounting = reportWorkerCounts(() => store.countByStatus());
  const templates = createTemplateCatalog({ dir: config.templatesDir, groups: parseGroupMembers(config.groupMembers) });
  const publisher = createIncomingEventPublisher(nc, componentSource('spawn'));
  const hostEnv = deps.hostEnv ?? process.env;
  const spawner = createSpawner({
    ...spawnSettingsOf(config),
    provider,
    registry,
    store,
    hostEnv,
    logger: log,
    async emit(workerId, uid, data) {
      await publisher.publish(workerId, { type: 'system', uid, ts: new Date().toISOString(), data });
    },
  });
  const lifecycle = await startLifecycle({ nc, registry, store, provider, logger: log, ...lifecycleTimingOf(config) });
  const retention = startRetention({
    nc,
    store,
    workers: registry,
    logger: log,
    defaultDays: config.eventRetentionDays,
    intervalMs: config.retentionSweepIntervalMs,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const rpcs = serveSessionRpcs({ nc, db, config, logger: log, registry, store, templates, provider, hostEnv, spawner });
  const registryRpcs = serveWorkerRegistry(nc, registry, log, { livenessWriteIntervalMs: livenessWriteIntervalOf(config.sidecarLostAfterMs) });
  const health = serveHealth(nc, 'session', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(db) });
  if (!provider.seals) warnUnsealed(log, config.sandboxAllowUnsealed);
  log.info({ provider: provider.name, templatesDir: config.templatesDir ?? null }, 'session service started');
  return {
    async stop() {
      stopCounting();
      health.unsubscribe();
      rpcs.stop();
      registryRpcs.stop();
      retention.stop();
      await spawner.stop();
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

/** Sandboxes that cannot be sealed say so at start, with what follows for templates. */
function warnUnsealed(log: Logger, allowUnsealed: boolean): void {
  log.warn(
    allowUnsealed
      ? "sandboxes cannot be sealed here and SVC_SANDBOX_ALLOW_UNSEALED=true: agents run with this machine's network and can reach NATS, the store and every service on it"
      : "sandboxes cannot be sealed here: templates that ask for a sealed sandbox (the default) are refused; install bubblewrap, or set SVC_SANDBOX_ALLOW_UNSEALED=true to accept agents with this machine's network",
  );
}
