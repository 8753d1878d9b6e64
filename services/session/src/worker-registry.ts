import { randomBytes } from 'node:crypto';
import type { Subscription } from '@nats-io/transport-node';
import { generateWorkerToken, hashWorkerToken } from '@svc/auth';
import { openWorkerRecords, serveRpc, type KV, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  createChecker,
  CreateWorkerRequest,
  GetWorkerRequest,
  isEndedStatus,
  SetWorkerStatusRequest,
  subjects,
  type CreateWorkerRequestType,
  type CreateWorkerResultType,
  type SetWorkerStatusRequestType,
  type WorkerActivity,
  type AccessEntry,
  type WorkerRecord,
  type WorkerStatus,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';

/** Records read at once by a sweep over every worker. */
const RECORDS_READ_AT_ONCE = 64;

/** A worker record as others may see it: without its token hash. */
export type VisibleWorker = Omit<WorkerRecord, 'token_hash'>;

function visible(record: WorkerRecord): VisibleWorker {
  const { token_hash: _hash, ...shown } = record;
  return shown;
}

/**
 * Workers and their token hashes, kept in the `svc_workers` KV bucket that every gateway
 * watches. Every change is also published on `svc.workers.status.<worker>`.
 */
export async function createWorkerRegistry(nc: NatsConnection, logger: Logger) {
  const log = logger.child({ component: 'worker-registry' });
  const kv = await openWorkerRecords(nc, log);

  async function read(workerId: string): Promise<{ record: WorkerRecord; revision: number }> {
    const entry = await kv.get(workerId);
    if (!entry || entry.operation !== 'PUT') throw new CodedError('worker_not_found', `worker ${workerId} does not exist`);
    return { record: entry.json<WorkerRecord>(), revision: entry.revision };
  }

  /**
   * Compare-and-set on the revision: two concurrent changes cannot both win. A write that only
   * records liveness may slip in between; then read again and retry. An update that answers the
   * record itself writes nothing.
   */
  async function change(workerId: string, update: (record: WorkerRecord) => WorkerRecord): Promise<WorkerRecord> {
    for (let attempt = 1; ; attempt++) {
      const { record, revision } = await read(workerId);
      const next = update(record);
      if (next === record) return record;
      try {
        await kv.update(workerId, JSON.stringify(next), revision);
      } catch (err) {
        if (attempt < 3) continue;
        throw new CodedError('conflict', `worker ${workerId} changed meanwhile; try again`, undefined, { cause: err });
      }
      nc.publish(subjects.workerStatus(workerId), JSON.stringify(visible(next)));
      return next;
    }
  }

  return {
    kv,
    /** A new worker and its token. */
    create: (request: CreateWorkerRequestType & { session_id?: string }) => createWorker(nc, kv, log, request),

    async get(workerId: string): Promise<WorkerRecord> {
      return (await read(workerId)).record;
    },

    /**
     * Moves a worker to `status`; an ended worker keeps its status (`worker_ended`). The token
     * of an ended worker still authenticates, so its sidecar hears `409 worker_ended`, until
     * `revoke`.
     */
    async setStatus(workerId: string, status: WorkerStatus): Promise<VisibleWorker> {
      const next = await change(workerId, (record) => {
        if (isEndedStatus(record.status) && record.status !== status) {
          throw new CodedError('worker_ended', `worker ${workerId} is ${record.status}; an ended worker keeps its status`);
        }
        const now = new Date().toISOString();
        return { ...record, status, updated_at: now, ...(isEndedStatus(status) && !record.ended_at ? { ended_at: now } : {}) };
      });
      log.info({ worker_id: workerId, status }, 'worker status changed');
      return visible(next);
    },

    /**
     * Records the activity its sidecar reported, at the service's time (the sandbox's clock is
     * the agent's); the same again, or a report for an ended worker, writes nothing. Reports come
     * one at a time, in each worker's order (the lifecycle stream's consumer).
     */
    async setActivity(workerId: string, activity: WorkerActivity): Promise<void> {
      await change(workerId, (record) =>
        isEndedStatus(record.status) || record.activity === activity ? record : { ...record, activity, activity_at: new Date().toISOString() },
      );
    },

    /** Workers without a session that ended before `before` and still have events: retention's share. */
    endedWithoutSession: (before: Date) => endedWithoutSession(kv, before),

    /** Records that the worker's events were removed (retention), so the next sweep passes it by. */
    async markEventsPurged(workerId: string, at: Date): Promise<void> {
      await change(workerId, (record) => ({ ...record, events_purged_at: at.toISOString() }));
    },

    /** Replaces who besides its owner may see or act on it (its session's list: docs/teams.md); every gateway follows within a moment. */
    async setAccess(workerId: string, access: readonly AccessEntry[]): Promise<WorkerRecord> {
      return change(workerId, (record) => {
        const { access: _old, ...rest } = record;
        return { ...rest, ...(access.length > 0 ? { access: [...access] } : {}), updated_at: new Date().toISOString() };
      });
    },

    /** Forgets the worker's token: every gateway refuses it (401) within a moment. */
    async revoke(workerId: string): Promise<void> {
      await change(workerId, (record) => {
        const { token_hash: _revoked, ...rest } = record;
        return { ...rest, updated_at: new Date().toISOString() };
      });
      log.info({ worker_id: workerId }, 'worker token revoked');
    },
  };
}

export type WorkerRegistry = Awaited<ReturnType<typeof createWorkerRegistry>>;

/** A new worker, `pending`, with a fresh token (returned once: only its hash is kept). */
async function createWorker(
  nc: NatsConnection,
  kv: KV,
  log: Logger,
  request: CreateWorkerRequestType & { session_id?: string },
): Promise<CreateWorkerResultType> {
  const workerId = request.worker_id ?? `wrk_${randomBytes(12).toString('base64url')}`;
  const token = generateWorkerToken();
  const record: WorkerRecord = {
    worker_id: workerId,
    ...(request.session_id ? { session_id: request.session_id } : {}),
    owner: request.owner,
    ...(request.access?.length ? { access: request.access } : {}),
    ...(request.approvals?.length ? { approvals: request.approvals } : {}),
    ...(request.template ? { template: request.template } : {}),
    ...(request.teams?.length ? { teams: request.teams } : {}),
    status: 'pending',
    token_hash: hashWorkerToken(token),
    ...(request.decision_policy ? { decision_policy: request.decision_policy } : {}),
    ...(request.model ? { model: request.model } : {}),
    ...(request.egress ? { egress: request.egress } : {}),
    ...(request.workspace ? { workspace: request.workspace } : {}),
    ...(request.mode ? { mode: request.mode } : {}),
    ...(request.keep_sandbox_s ? { keep_sandbox_s: request.keep_sandbox_s } : {}),
    updated_at: new Date().toISOString(),
  };
  try {
    await kv.create(workerId, JSON.stringify(record));
  } catch (err) {
    throw new CodedError('conflict', `worker ${workerId} already exists`, undefined, { cause: err });
  }
  nc.publish(subjects.workerStatus(workerId), JSON.stringify(visible(record)));
  log.info({ worker_id: workerId, owner: request.owner }, 'worker created');
  return { worker_id: workerId, token };
}

/**
 * Workers registered without a session (`POST /v1/workers`) that ended before `before` and
 * whose events are still stored: retention's share of them (a session's worker goes with its
 * session). Reads every record, 64 at a time: an hourly sweep of a bucket that holds a
 * record per worker ever made.
 */
async function endedWithoutSession(kv: KV, before: Date): Promise<WorkerRecord[]> {
  const due: WorkerRecord[] = [];
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  for (let start = 0; start < keys.length; start += RECORDS_READ_AT_ONCE) {
    const entries = await Promise.all(keys.slice(start, start + RECORDS_READ_AT_ONCE).map((key) => kv.get(key)));
    for (const entry of entries) {
      if (!entry || entry.operation !== 'PUT') continue;
      const record = entry.json<WorkerRecord>();
      const endedAt = record.ended_at ?? record.updated_at;
      if (!record.session_id && isEndedStatus(record.status) && !record.events_purged_at && Date.parse(endedAt) < before.getTime()) due.push(record);
    }
  }
  return due;
}

/** The registry's bus operations (the local stack's demo and tests register workers directly). */
export function serveWorkerRegistry(
  nc: NatsConnection,
  registry: WorkerRegistry,
  logger: Logger,
  options: { livenessWriteIntervalMs?: number } = {},
): { stop(): void } {
  const log = logger.child({ component: 'worker-registry' });
  const queue = 'session';
  const subscriptions: Subscription[] = [
    serveRpc<CreateWorkerRequestType, CreateWorkerResultType>(nc, subjects.rpc.createWorker, (request) => registry.create(request), {
      logger: log,
      queue,
      checker: createChecker(CreateWorkerRequest),
    }),
    serveRpc<{ worker_id: string }, VisibleWorker>(nc, subjects.rpc.getWorker, async (request) => visible(await registry.get(request.worker_id)), {
      logger: log,
      queue,
      checker: createChecker(GetWorkerRequest),
    }),
    serveRpc<SetWorkerStatusRequestType, VisibleWorker>(nc, subjects.rpc.setWorkerStatus, (request) => registry.setStatus(request.worker_id, request.status), {
      logger: log,
      queue,
      checker: createChecker(SetWorkerStatusRequest),
    }),
    recordLiveness(nc, registry.kv, log, options.livenessWriteIntervalMs ?? LIVENESS_WRITE_INTERVAL_MS),
  ];
  return { stop: () => subscriptions.forEach((s) => s.unsubscribe()) };
}

/** A sidecar seen alive is recorded at most this often per worker (each write wakes every gateway's watch). */
const LIVENESS_WRITE_INTERVAL_MS = 10_000;

/**
 * How often liveness is written for a liveness deadline: at most every quarter of it. With the
 * sidecar's control channel polls (also under a quarter), only a silent sidecar is lost.
 */
export function livenessWriteIntervalOf(sidecarLostAfterMs: number): number {
  return Math.min(LIVENESS_WRITE_INTERVAL_MS, Math.floor(sidecarLostAfterMs / 4));
}

/**
 * Every control channel poll says the sidecar is alive (`svc.workers.alive.<worker>`); the worker's
 * `last_seen_at` records it, at most every 10 s. A failed or raced write is simply skipped: the
 * next poll brings another chance.
 */
function recordLiveness(nc: NatsConnection, kv: KV, log: Logger, intervalMs: number): Subscription {
  const lastWritten = new Map<string, number>();
  return nc.subscribe(subjects.workerAliveAll, {
    queue: 'session',
    callback: (err, msg) => {
      if (err) return;
      const workerId = msg.subject.slice(subjects.workerAlive('').length);
      const now = Date.now();
      if (now - (lastWritten.get(workerId) ?? 0) < intervalMs) return;
      lastWritten.set(workerId, now);
      void (async () => {
        const entry = await kv.get(workerId);
        if (!entry || entry.operation !== 'PUT') return;
        const record = entry.json<WorkerRecord>();
        const seen: WorkerRecord = { ...record, last_seen_at: new Date(now).toISOString() };
        await kv.update(workerId, JSON.stringify(seen), entry.revision);
      })().catch((error: unknown) => log.debug({ err: error, worker_id: workerId }, 'liveness not recorded this time'));
    },
  });
}
