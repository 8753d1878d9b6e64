import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { controlSettings, localAuditKey, start as startControl } from '@svc/control';
import { start as startEventIngest } from '@svc/event-ingest';
import { LOCAL_USER, start as startGateway, type GatewayConfig } from '@svc/gateway';
import { sessionSettings, start as startSession, type SessionConfig } from '@svc/session';
import {
  connectBus,
  ensureStreamsWhenReachable,
  natsAuthorization,
  streamSettings,
  requestJson,
  type NatsConnection,
  type NatsCredentials,
  type NatsServiceUser,
} from '@svc/bus';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { CodedError, subjects, type CreateSessionRpcType, type Session } from '@svc/protocol';
import { readConfig, type Logger } from '@svc/service-kit';
import { openDatabase, type StoreKind } from '@svc/store';

export interface LocalStackOptions {
  /** Everything the stack keeps (NATS JetStream store, PGlite data) lives under here. */
  stateDir: string;
  /** Use this Postgres instead of embedded PGlite. */
  databaseUrl?: string | undefined;
  /** Use this NATS instead of starting a nats-server. */
  natsUrl?: string | undefined;
  /** The users of that NATS (each service connects as its own); a nats-server started here makes its own. */
  natsCredentials?: NatsCredentials | undefined;
  /** The gateway's settings (the local stack turns the built-in issuer on). */
  gateway: GatewayConfig;
  /** The session service's settings (default: from `SVC_*`, sandboxes under the state directory, the sidecar calling this gateway). */
  session?: Partial<SessionConfig>;
  /** Start a session of the `demo` template (the demo agent under a real sidecar, in a local sandbox). */
  demo?: boolean;
  logger: Logger;
}

export interface LocalStack {
  natsUrl: string;
  /** Who may connect to that NATS (undefined: an external one without authentication). */
  natsCredentials: NatsCredentials | undefined;
  /** The stack's own NATS connection (for probes). */
  nc: NatsConnection;
  gatewayUrl: string;
  /** The built-in issuer's sign-in code (also in the state directory's `local-sign-in-code`), when it runs. */
  localSignInCode?: string | undefined;
  /** The demo session and its worker, when started with `demo: true`. */
  demo?: Session | undefined;
  /** Why the demo session could not start, when it could not (the stack runs on without it). */
  demoRefused?: string | undefined;
  store: StoreKind;
  stop(): Promise<void>;
}

/** The whole control plane in one process: nats-server, the store and the four services. */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const { logger } = options;
  const stateDir = path.resolve(options.stateDir);
  await mkdir(stateDir, { recursive: true });
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const stopOne of stops.reverse()) await stopOne();
  };

  try {
    let natsServer: NatsServerProcess<NatsCredentials> | undefined;
    if (!options.natsUrl) {
      natsServer = await launchNatsServer({ storeDir: path.join(stateDir, 'nats'), authorization: natsAuthorization() });
      stops.push(() => natsServer!.stop());
    }
    const natsUrl = options.natsUrl ?? natsServer!.url;
    const credentials = natsServer?.credentials ?? options.natsCredentials;
    // The stack's own connection (streams, the demo session, probes) is the operator's; each
    // service has its own, as its own user, as in a deployment of one process per service.
    const nc = await connectBus({ servers: natsUrl, name: 'local-stack', logger, credentials: credentials?.operator });
    stops.push(() => nc.drain());
    await ensureStreamsWhenReachable(nc, logger, { replicas: readConfig(streamSettings).jetstreamReplicas });
    const serviceConnections: NatsConnection[] = [];
    const connectAs = async (user: NatsServiceUser): Promise<NatsConnection> => {
      if (!credentials) return nc;
      const own = await connectBus({ servers: natsUrl, name: `${user}-local`, logger, credentials: credentials[user] });
      stops.push(() => own.drain());
      serviceConnections.push(own);
      return own;
    };

    const database = await openDatabase(options.databaseUrl ? { url: options.databaseUrl } : { dataDir: path.join(stateDir, 'pglite') });
    stops.push(() => database.close());

    const instance = 'local';
    const controlConfig = readConfig(controlSettings);
    // Who decides: the gateway signs it, control checks it (docs/nats-security.md); one process,
    // so a key of this run's, in memory, unless one is set.
    const userAssertionKey = options.gateway.userAssertionKey ?? randomBytes(32).toString('base64url');
    // event-ingest owns the event tables and migrates them, so it starts first.
    const services = [
      await startEventIngest({ nc: await connectAs('event-ingest'), db: database.db, logger, instance, replicaIndex: 0, replicaCount: 1 }),
      await startControl({
        nc: await connectAs('control'),
        db: database.db,
        logger,
        instance,
        // Links in notifications point at this stack's gateway, signed with its key.
        config: {
          ...controlConfig,
          // The trail is keyed with the stack's own key unless one is set (docs/audit.md).
          auditKey: controlConfig.auditKey ?? (await localAuditKey(stateDir)),
          // The stack's own NATS and store: no webhook may reach them.
          natsUrl,
          databaseUrl: options.databaseUrl,
          decisionLinkKey: options.gateway.decisionLinkKey,
          userAssertionKey,
          publicUrl: options.gateway.publicUrl ?? (options.gateway.port ? `http://${options.gateway.host}:${options.gateway.port}` : undefined),
        },
      }),
    ];
    for (const service of services) stops.push(() => service.stop());
    // The NATS and the store this stack runs on are what egress tunnels must never reach (embedded PGlite has no address).
    const gateway = await startGateway({
      nc: await connectAs('gateway'),
      logger,
      instance,
      config: { ...options.gateway, stateDir, natsUrl, userAssertionKey, databaseUrl: options.databaseUrl },
    });
    stops.push(() => gateway.stop());
    // After the gateway: sandboxes call it, so its address must be known.
    const sessionConfig: SessionConfig = {
      ...readConfig(sessionSettings, { SVC_SANDBOXES_DIR: path.join(stateDir, 'sandboxes'), ...process.env }),
      // The sandboxes' channel leads to the gateway's worker port, never its public one.
      sandboxControlPlaneUrl: gateway.workerUrl,
      // Its secrets (sign-in code, keys) must stay out of every sandbox's sight.
      stateDir,
      ...options.session,
    };
    const session = await startSession({ nc: await connectAs('session'), db: database.db, logger, instance, config: sessionConfig });
    stops.push(() => session.stop());
    // The services subscribed on their own connections: once each has flushed, the server has
    // their subscriptions, and a request on the stack's connection finds them.
    await Promise.all(serviceConnections.map((connection) => connection.flush()));
    let demo: Session | undefined;
    let demoRefused: string | undefined;
    if (options.demo) {
      try {
        demo = await requestJson<Session>(nc, subjects.rpc.createSession, {
          caller: { sub: LOCAL_USER, groups: [], admin: false },
          body: { template: 'demo' },
        } satisfies CreateSessionRpcType);
      } catch (err) {
        // The stack works without its demo (e.g. no bubblewrap, so no sealed sandbox): say why.
        if (!(err instanceof CodedError)) throw err;
        demoRefused = err.message;
      }
    }
    return {
      natsUrl,
      natsCredentials: credentials,
      nc,
      gatewayUrl: gateway.url,
      localSignInCode: gateway.localIssuer?.signInCode,
      demo,
      demoRefused,
      store: database.kind,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
