import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectBus, requestJson, type NatsConnection, type NatsServiceUser } from '@svc/bus';
import { subjects, type CreateWorkerRequestType, type CreateWorkerResultType, type StatusResponseType } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import {
  freePort,
  startNatsServer,
  startPgBouncer,
  startPostgres,
  startServiceProcess,
  startTestIssuer,
  waitFor,
  type NatsCluster,
  type NatsServerProcess,
  type PgBouncerOptions,
  type PgBouncerProcess,
  type PostgresProcess,
  type ServiceProcess,
  type TestIssuer,
} from '@svc/test-support';

/** What the stack needs of its NATS: one server (the default) or a cluster a test started. */
export type StackNats = Pick<NatsCluster, 'url' | 'credentials' | 'permissionViolations' | 'stop'>;

export interface E2eStack<Nats extends StackNats = NatsServerProcess> {
  gatewayUrl: string;
  /** Where the session service keeps local sandboxes (one directory per worker). */
  sandboxesDir: string;
  /** The `SVC_*` environment every service runs with (beside its own NATS user): `SVC_DECISION_LINK_KEY` among it. */
  env: Record<string, string>;
  /** The stack's nats-server, or cluster (its credentials: each service's user, and the operator's). */
  nats: Nats;
  postgres: PostgresProcess;
  /** The PgBouncer the services' work goes through, when the stack was asked for one. */
  pooler: PgBouncerProcess | undefined;
  nc: NatsConnection;
  /** event-ingest replicas by index; a test may kill one and put a new one in its place. */
  ingest: ServiceProcess[];
  /** Starts event-ingest replica `replicaIndex` (with more environment: a setting changed across its restart). */
  startIngestReplica(replicaIndex: number, env?: Record<string, string>): ServiceProcess;
  /** A user's token (extra claims: `svc_admin: true` makes an admin). */
  userToken(sub: string, claims?: Record<string, unknown>): Promise<string>;
  createWorker(owner: string, extra?: Omit<CreateWorkerRequestType, 'owner'>): Promise<CreateWorkerResultType>;
  /** Stops the gateway (SIGTERM, or SIGKILL: a crash), and returns the function that starts it again on the same port. */
  stopGateway(how?: 'stop' | 'kill'): Promise<() => Promise<void>>;
  /** Each event-ingest replica's probe URL (`…/readyz`), when the stack was asked for them. */
  ingestProbeUrls: string[];
  /** Each service's `…/metrics` on its probe port, by service (event-ingest: one per replica), when the stack was asked for probes. */
  metricsUrls: Record<'event-ingest' | 'control' | 'session' | 'gateway', string[]>;
  /** Kills a service (SIGKILL: a crash), and returns the function that starts it again. */
  killService(service: 'session' | 'control'): Promise<() => void>;
  /** Every service process running now. */
  processes(): ServiceProcess[];
  /** Every service's output, for a failing test's message. */
  outputs(): string;
  stop(): Promise<void>;
}

/**
 * The whole control plane as deployed: a real nats-server, a real Postgres, an OIDC issuer, and
 * every service started from its built `main.js` as its own process (two event-ingest replicas
 * unless told otherwise). Resolves once `GET /v1/status` says every service is up.
 */
export interface StackOptions {
  ingestReplicas?: number;
  sessionEnv?: Record<string, string>;
  gatewayEnv?: Record<string, string>;
  /** Postgres with `fsync` and `synchronous_commit` on: a test of durability needs them. */
  durablePostgres?: boolean;
  /** Give each event-ingest replica a probe port (`/healthz`, `/readyz`, `/metrics`). */
  ingestProbes?: boolean;
  /** Give every service a probe port (and so `/metrics`), event-ingest's replicas too. */
  probes?: boolean;
  /** More environment for every service (tracing's endpoint, say). */
  env?: Record<string, string>;
  /**
   * The services' work goes through a PgBouncer (`SVC_DATABASE_URL`, transaction pooling unless
   * told otherwise), their migrations straight to Postgres (`SVC_DATABASE_MIGRATION_URL`).
   */
  pooler?: PgBouncerOptions;
}

export function startStack(options?: StackOptions): Promise<E2eStack>;
/** The stack on a NATS the test started (a cluster): the stack stops it with the rest. */
export function startStack<Nats extends StackNats>(options: StackOptions & { nats: Nats }): Promise<E2eStack<Nats>>;
export async function startStack(options: StackOptions & { nats?: StackNats } = {}): Promise<E2eStack<StackNats>> {
  const replicas = options.ingestReplicas ?? 2;
  const [nats, postgres, issuer]: [StackNats, PostgresProcess, TestIssuer] = await Promise.all([
    options.nats ?? startNatsServer(),
    startPostgres({ durable: options.durablePostgres ?? false }),
    startTestIssuer('svc'),
  ]);
  const pooler = options.pooler ? await startPgBouncer(postgres, options.pooler) : undefined;
  const ingestProbePorts = options.ingestProbes || options.probes ? await Promise.all(Array.from({ length: replicas }, () => freePort())) : [];
  const [controlProbe, sessionProbe, gatewayProbe] = options.probes ? await Promise.all([freePort(), freePort(), freePort()]) : [];
  const probeEnv = (port: number | undefined): Record<string, string> => (port ? { SVC_HEALTH_PORT: String(port) } : {});
  const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-e2e-'));
  const port = await freePort();
  const gatewayUrl = `http://127.0.0.1:${port}`;
  // The sandboxes' channel leads to the gateway's worker port, never its public one.
  const workerPort = await freePort();
  const workerUrl = `http://127.0.0.1:${workerPort}`;
  const decisionLinkKey = randomBytes(32).toString('base64url');
  // Who decides: signed by the gateway, checked by control (docs/nats-security.md); theirs alone.
  const userAssertionEnv = { SVC_USER_ASSERTION_KEY: randomBytes(32).toString('base64url') };
  const env = {
    SVC_NATS_URL: nats.url,
    ...(pooler ? { SVC_DATABASE_URL: pooler.url, SVC_DATABASE_MIGRATION_URL: postgres.url } : { SVC_DATABASE_URL: postgres.url }),
    SVC_STATE_DIR: stateDir,
    SVC_LOG_LEVEL: 'warn',
    // Decision links in notifications: signed by control, checked by the gateway, pointing at it.
    SVC_DECISION_LINK_KEY: decisionLinkKey,
    SVC_GATEWAY_PUBLIC_URL: gatewayUrl,
    // The tests' webhook receivers listen on loopback, where webhooks may not point unless the
    // operator allows it (docs/webhooks.md); NATS, the store and the gateway stay refused.
    SVC_WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    // Audit records are keyed (docs/audit.md); the key is the control service's alone.
    SVC_AUDIT_KEY: randomBytes(32).toString('base64url'),
    ...options.env,
  };
  /** Each service connects to NATS as its own user, as deployed. */
  const natsUser = (user: NatsServiceUser) => ({ SVC_NATS_USER: user, SVC_NATS_PASSWORD: nats.credentials[user].password });
  const gatewayEnv = {
    ...env,
    ...natsUser('gateway'),
    ...userAssertionEnv,
    SVC_GATEWAY_PORT: String(port),
    SVC_GATEWAY_WORKER_PORT: String(workerPort),
    SVC_OIDC_ISSUER: issuer.issuer,
    SVC_OIDC_AUDIENCE: 'svc',
    // Tests poll and watch hard on purpose (one user, many streams); rate limits and caps have their own tests.
    SVC_RATE_LIMIT_MAX: '100000000',
    SVC_MAX_STREAMS_PER_USER: '100000',
    ...probeEnv(gatewayProbe),
    ...options.gatewayEnv,
  };
  const startIngestReplica = (replicaIndex: number, moreEnv: Record<string, string> = {}) =>
    startServiceProcess('event-ingest', {
      ...env,
      ...natsUser('event-ingest'),
      SVC_INSTANCE: `ingest-${replicaIndex}`,
      SVC_INGEST_REPLICA_INDEX: String(replicaIndex),
      SVC_INGEST_REPLICA_COUNT: String(replicas),
      ...(ingestProbePorts[replicaIndex] ? { SVC_HEALTH_PORT: String(ingestProbePorts[replicaIndex]) } : {}),
      ...moreEnv,
    });
  const ingest = Array.from({ length: replicas }, (_, index) => startIngestReplica(index));
  const sandboxesDir = path.join(stateDir, 'sandboxes');
  const sessionEnv = {
    ...env,
    ...natsUser('session'),
    SVC_SANDBOXES_DIR: sandboxesDir,
    SVC_SANDBOX_CONTROL_PLANE_URL: workerUrl,
    ...probeEnv(sessionProbe),
    ...options.sessionEnv,
  };
  const othersEnv = { session: sessionEnv, control: { ...env, ...natsUser('control'), ...userAssertionEnv, ...probeEnv(controlProbe) } };
  const others = { session: startServiceProcess('session', othersEnv.session), control: startServiceProcess('control', othersEnv.control) };
  let gateway = startServiceProcess('gateway', gatewayEnv);
  const everyProcess = () => [...ingest, others.session, others.control, gateway];
  const outputs = () =>
    everyProcess()
      .map((p) => `--- ${p.service}\n${p.output()}`)
      .join('\n');
  const statusToken = await issuer.sign({ sub: 'e2e-status' });
  let lastStatus: unknown;
  const gatewayReady = () =>
    waitFor(
      'every service up (GET /v1/status)',
      async () => {
        const response = await fetch(`${gatewayUrl}/v1/status`, { headers: { authorization: `Bearer ${statusToken}` } }).catch(() => undefined);
        lastStatus = response?.status === 200 ? await response.json() : response?.status;
        return (lastStatus as StatusResponseType | undefined)?.status === 'ok';
      },
      60_000,
      200,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}\nthe last status: ${JSON.stringify(lastStatus)}\n${outputs()}`);
    });
  await gatewayReady();
  // /v1/status is ok with one event-ingest replica answering: a replica that died at its start would go unseen.
  const exited = everyProcess().filter((p) => !p.running());
  if (exited.length > 0) throw new Error(`${exited.map((p) => p.service).join(', ')} exited at start\n${outputs()}`);
  const nc = await connectBus({
    servers: nats.url,
    name: 'e2e',
    logger: createLogger({ name: 'e2e', level: 'silent' }),
    credentials: nats.credentials.operator,
  });

  return {
    gatewayUrl,
    sandboxesDir,
    env,
    nats,
    postgres,
    pooler,
    nc,
    ingest,
    startIngestReplica,
    userToken: (sub, claims = {}) => issuer.sign({ ...claims, sub }),
    createWorker: (owner, extra = {}) => requestJson<CreateWorkerResultType>(nc, subjects.rpc.createWorker, { owner, ...extra }),
    ingestProbeUrls: ingestProbePorts.map((probePort) => `http://127.0.0.1:${probePort}/readyz`),
    metricsUrls: {
      'event-ingest': ingestProbePorts.map((probePort) => `http://127.0.0.1:${probePort}/metrics`),
      ...Object.fromEntries(
        (
          [
            ['control', controlProbe],
            ['session', sessionProbe],
            ['gateway', gatewayProbe],
          ] as const
        ).map(([service, port]) => [service, port ? [`http://127.0.0.1:${port}/metrics`] : []]),
      ),
    } as E2eStack['metricsUrls'],
    async stopGateway(how = 'stop') {
      if (how === 'kill') await gateway.kill();
      else await gateway.stop();
      return async () => {
        gateway = startServiceProcess('gateway', gatewayEnv);
        await gatewayReady();
      };
    },
    async killService(service) {
      await others[service].kill();
      return () => {
        others[service] = startServiceProcess(service, othersEnv[service]);
      };
    },
    processes: everyProcess,
    outputs,
    async stop() {
      await nc.close();
      await Promise.all(everyProcess().map((p) => p.kill()));
      // A service that needs a subject its NATS user may not use fails quietly: say so.
      const violations = nats.permissionViolations();
      await pooler?.stop();
      await Promise.all([nats.stop(), postgres.stop(), issuer.stop()]);
      await rm(stateDir, { recursive: true, force: true });
      if (violations.length > 0) throw new Error(`nats-server reported permission violations by the services:\n${violations.join('\n')}`);
    },
  };
}
