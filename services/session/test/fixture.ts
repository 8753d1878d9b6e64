import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ensureStreams, requestJson } from '@svc/bus';
import { start as startEventIngest } from '@svc/event-ingest';
import { subjects, type ListEventsRequestType, type Session, type StoredEvent, type CallerType } from '@svc/protocol';
import { readConfig, type RunningService } from '@svc/service-kit';
import { openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, waitFor, type BusFixture } from '@svc/test-support';
import { sessionSettings, start, type SessionConfig } from '../src/index.js';
import type { SandboxProvider } from '../src/sandbox/provider.js';

export const ALICE: CallerType = { sub: 'alice', groups: [], admin: false };
export const BOB: CallerType = { sub: 'bob', groups: [], admin: false };
export const ADMIN: CallerType = { sub: 'root', groups: [], admin: true };

export interface SessionFixture {
  bus: BusFixture;
  /** The session service under test. */
  service: RunningService;
  database: StoreDatabase;
  /** Where sandboxes live (one directory per worker). */
  sandboxesDir: string;
  /** The configured templates directory. */
  templatesDir: string;
  writeTemplate(name: string, toml: string): Promise<void>;
  create(caller: CallerType, body: Record<string, unknown>): Promise<Session>;
  get(caller: CallerType, sessionId: string): Promise<Session>;
  remove(caller: CallerType, sessionId: string): Promise<Session>;
  /** Waits until the session has `status`. */
  waitForStatus(sessionId: string, status: Session['status'], timeoutMs?: number): Promise<Session>;
  events(workerId: string): Promise<StoredEvent[]>;
  /** Stops event-ingest (its queries and purges go unanswered) until `startIngest`. */
  stopIngest(): Promise<void>;
  startIngest(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The session service with what it works with: a real nats-server, an embedded store,
 * event-ingest (which stores the spawn steps and announces agent exits), and sandboxes in a
 * temporary directory. No gateway: sidecars here cannot reach one (the e2e tests have one).
 */
export async function startSessionFixture(
  settings: Record<string, string> = {},
  hostEnv: Record<string, string> = {},
  provider?: SandboxProvider,
  /** The session service's clock (its retention sweep's). */
  now?: () => number,
): Promise<SessionFixture> {
  const bus = await startBusFixture();
  await ensureStreams(bus.nc);
  const database = await openDatabase({});
  const work = await mkdtemp(path.join(tmpdir(), 'svc-session-'));
  const sandboxesDir = path.join(work, 'sandboxes');
  const templatesDir = path.join(work, 'templates');
  await mkdir(templatesDir);
  const startIngest = () => startEventIngest({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'ingest-0', replicaIndex: 0, replicaCount: 1 });
  let ingest: RunningService | undefined = await startIngest();
  const config: SessionConfig = readConfig(sessionSettings, {
    SVC_SANDBOXES_DIR: sandboxesDir,
    SVC_TEMPLATES_DIR: templatesDir,
    SVC_SANDBOX_CONTROL_PLANE_URL: 'http://127.0.0.1:9',
    SVC_SANDBOX_KILL_GRACE_MS: '2000',
    ...settings,
  });
  const session: RunningService = await start({
    nc: bus.nc,
    db: database.db,
    logger: bus.logger,
    instance: 'session-0',
    config,
    hostEnv,
    ...(provider ? { provider } : {}),
    ...(now ? { now } : {}),
  });
  const get = (caller: CallerType, sessionId: string) => requestJson<Session>(bus.nc, subjects.rpc.getSession, { caller, session_id: sessionId });
  return {
    bus,
    service: session,
    database,
    sandboxesDir,
    templatesDir,
    writeTemplate: (name, toml) => writeFile(path.join(templatesDir, `${name}.toml`), toml),
    create: (caller, body) => requestJson<Session>(bus.nc, subjects.rpc.createSession, { caller, body }),
    get,
    remove: (caller, sessionId) => requestJson<Session>(bus.nc, subjects.rpc.deleteSession, { caller, session_id: sessionId }, { timeoutMs: 30_000 }),
    waitForStatus: (sessionId, status, timeoutMs = 10_000) =>
      waitFor(
        `session ${sessionId} ${status}`,
        async () => {
          const current = await get(ADMIN, sessionId);
          return current.status === status ? current : undefined;
        },
        timeoutMs,
      ),
    async events(workerId) {
      const request: ListEventsRequestType = { worker_id: workerId, after_id: '0', limit: 1000 };
      return (await requestJson<{ items: StoredEvent[] }>(bus.nc, subjects.rpc.listEvents, request)).items;
    },
    async stopIngest() {
      await ingest?.stop();
      ingest = undefined;
    },
    async startIngest() {
      ingest ??= await startIngest();
    },
    async stop() {
      await session.stop().catch(() => {});
      await ingest?.stop();
      await database.close();
      await bus.stop();
      await rm(work, { recursive: true, force: true });
    },
  };
}
