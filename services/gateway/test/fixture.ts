import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { Kvm, type KV } from '@nats-io/kv';
import type { FastifyPluginAsync } from 'fastify';
import Type from 'typebox';
import { createOidcVerifier, createWorkerDirectory, generateWorkerToken, hashWorkerToken, type LocalIssuer, type WorkerDirectory } from '@svc/auth';
import { ensureStreams } from '@svc/bus';
import { kvBuckets, type StoredEventBatchType, type WorkerRecord, type WorkerStatus } from '@svc/protocol';
import { start as startEventIngest } from '@svc/event-ingest';
import { sessionSettings, start as startSession } from '@svc/session';
import { controlSettings, start as startControl } from '@svc/control';
import { createLogger, readConfig } from '@svc/service-kit';
import { openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, startPostgres, startTestIssuer, type BusFixture, type TestIssuer } from '@svc/test-support';
import { buildGatewayApp, type GatewayApp } from '../src/app.js';
import type { GatewaySettings } from '../src/config.js';
import { authorizeWorker } from '../src/auth/authorization.js';

export const AUDIENCE = 'svc';

export const DEFAULT_SETTINGS: GatewaySettings = {
  trustedProxies: ['10.0.0.1'],
  corsOrigins: ['https://console.example'],
  rateLimitMax: 10_000,
  rateLimitWindowMs: 60_000,
  bodyLimitBytes: 64 * 1024,
  oidcAudience: AUDIENCE,
};

/** Routes that exist only in tests: one per kind of caller, one that throws, one with a schema. */
export function testRoutesWith(workers: () => WorkerDirectory): FastifyPluginAsync {
  return async (app) => {
    await app.register(testRoutes);
    app.get('/v1/workers/:id/test-view', async (request) => {
      const record = await authorizeWorker(request, workers(), (request.params as { id: string }).id);
      return { worker_id: record.worker_id, owner: record.owner };
    });
  };
}

export const testRoutes: FastifyPluginAsync = async (app) => {
  app.get('/v1/test/whoami', async (request) => ({ principal: request.principal, ip: request.ip, request_id: request.id }));
  app.get('/v1/test/panic', async () => {
    throw new Error('handler bug with secret details');
  });
  app.post(
    '/v1/test/items',
    {
      schema: {
        body: Type.Object({ name: Type.String({ minLength: 1 }), count: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
        querystring: Type.Object({ dry_run: Type.Optional(Type.Boolean()) }),
      },
    },
    async (_request, reply) => reply.code(201).send({ ok: true }),
  );
  app.get('/v1/workers/:id/test-sidecar', { config: { auth: 'worker' } }, async (request) => ({ principal: request.principal }));
};

export interface GatewayFixture {
  app: GatewayApp;
  bus: BusFixture;
  issuer: TestIssuer;
  workers: WorkerDirectory;
  kv: KV;
  /** The store behind event-ingest, when the fixture runs the services. */
  database: StoreDatabase | undefined;
  /** Every log line the gateway wrote, as text. */
  logs: string[];
  userToken(sub?: string, claims?: Record<string, unknown>): Promise<string>;
  /** Registers a worker in the KV bucket (as the session service does) and returns its token. */
  createWorker(workerId: string, owner: string, status?: WorkerStatus, extra?: Partial<WorkerRecord>): Promise<string>;
  setWorker(record: WorkerRecord): Promise<void>;
  stop(): Promise<void>;
}

export interface FixtureOptions {
  localIssuer?: LocalIssuer;
  /** Also run the real event-ingest, session and control services behind it (over in-memory PGlite). */
  services?: boolean;
  /** With `services`: a throwaway Postgres instead of PGlite. */
  postgres?: boolean;
  /** With `services`: how many control replicas (default 1). */
  controlReplicas?: number;
  /** With `services`: event-ingest drops the announcements for which this returns true (as if lost). */
  dropAnnouncement?: (batch: StoredEventBatchType) => boolean;
}

/** The real event-ingest, session and control services behind the gateway (`services`), and how to stop them. */
async function startServices(
  bus: BusFixture,
  options: FixtureOptions,
  userAssertionKey: string,
): Promise<{ database: StoreDatabase; stopServices: Array<() => Promise<void>> }> {
  const stopServices: Array<() => Promise<void>> = [];
  const postgres = options.postgres ? await startPostgres() : undefined;
  if (postgres) stopServices.push(() => postgres.stop());
  const database = await openDatabase(postgres ? { url: postgres.url } : {});
  stopServices.push(() => database.close());
  const ingest = await startEventIngest({
    nc: bus.nc,
    db: database.db,
    logger: bus.logger,
    instance: 'ingest-0',
    replicaIndex: 0,
    replicaCount: 1,
    dropAnnouncement: options.dropAnnouncement,
  });
  const sandboxes = await mkdtemp(path.join(tmpdir(), 'svc-gw-sandboxes-'));
  stopServices.push(() => rm(sandboxes, { recursive: true, force: true }));
  const session = await startSession({
    nc: bus.nc,
    db: database.db,
    logger: bus.logger,
    instance: 'session-0',
    config: readConfig(sessionSettings, { SVC_SANDBOXES_DIR: sandboxes }),
  });
  stopServices.push(
    () => ingest.stop(),
    () => session.stop(),
  );
  for (let replica = 0; replica < (options.controlReplicas ?? 1); replica++) {
    // On Postgres each replica has its own pool, as separate processes would; PGlite is one in-process database.
    const controlDb = postgres ? await openDatabase({ url: postgres.url }) : database;
    if (controlDb !== database) stopServices.push(() => controlDb.close());
    const control = await startControl({
      nc: bus.nc,
      db: controlDb.db,
      logger: bus.logger,
      instance: `control-${replica}`,
      config: readConfig(controlSettings, { ...process.env, SVC_USER_ASSERTION_KEY: userAssertionKey }),
    });
    stopServices.push(() => control.stop());
  }
  return { database, stopServices };
}

export async function startGatewayFixture(
  settings: Partial<GatewaySettings> = {},
  extraRoutes: FastifyPluginAsync[] = [testRoutes],
  fixtureOptions: FixtureOptions = {},
): Promise<GatewayFixture> {
  const { localIssuer } = fixtureOptions;
  // The gateway signs who decides with it, the control replicas check it (docs/nats-security.md).
  const userAssertionKey = randomBytes(32).toString('base64url');
  const bus = await startBusFixture();
  await ensureStreams(bus.nc);
  const { database, stopServices } = fixtureOptions.services
    ? await startServices(bus, fixtureOptions, userAssertionKey)
    : { database: undefined, stopServices: [] as Array<() => Promise<void>> };
  const issuer = await startTestIssuer(AUDIENCE);
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      logs.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  });
  const logger = createLogger({ name: 'gateway-test', level: 'debug', destination });
  const users = createOidcVerifier({ issuer: issuer.issuer, audience: AUDIENCE, jwksCooldownMs: 0, adminClaim: 'svc_admin' });
  const workers = await createWorkerDirectory(bus.nc, logger);
  const app = await buildGatewayApp({
    nc: bus.nc,
    logger,
    instance: 'gw-test',
    settings: { ...DEFAULT_SETTINGS, userAssertionKey, ...settings },
    users,
    workers,
    localIssuer,
    routes: extraRoutes,
  });
  const kv = await new Kvm(bus.nc).open(kvBuckets.workers);

  const setWorker = async (record: WorkerRecord) => {
    await kv.put(record.worker_id, JSON.stringify(record));
  };

  return {
    app,
    bus,
    issuer,
    workers,
    kv,
    database,
    logs,
    userToken: (sub = 'alice', claims = {}) => issuer.sign({ sub, ...claims }),
    async createWorker(workerId, owner, status = 'running', extra = {}) {
      const token = generateWorkerToken();
      await setWorker({ worker_id: workerId, owner, status, token_hash: hashWorkerToken(token), updated_at: new Date().toISOString(), ...extra });
      return token;
    },
    setWorker,
    async stop() {
      await app.close();
      await workers.stop();
      for (const stopService of stopServices.reverse()) await stopService();
      await issuer.stop();
      await bus.stop();
    },
  };
}
