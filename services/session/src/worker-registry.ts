import { randomBytes } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import type { Subscription } from '@nats-io/transport-node';
import { generateWorkerToken, hashWorkerToken } from '@svc/auth';
import { serveRpc, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  createChecker,
  CreateWorkerRequest,
  GetWorkerRequest,
  isEndedStatus,
  kvBuckets,
  SetWorkerStatusRequest,
  subjects,
  type CreateWorkerRequestType,
  type CreateWorkerResultType,
  type SetWorkerStatusRequestType,
  type WorkerRecord,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';

/**
 * The minimal worker registry: workers and their token hashes, kept in the `svc_workers` KV
 * bucket that every gateway watches. (The spawn pipeline builds on it later.)
 */
export async function serveWorkerRegistry(nc: NatsConnection, logger: Logger): Promise<{ stop(): void }> {
  const log = logger.child({ component: 'worker-registry' });
  const kv: KV = await new Kvm(nc).create(kvBuckets.workers, { history: 1 });
  const queue = 'session';

  async function read(workerId: string): Promise<{ record: WorkerRecord; revision: number }> {
    const entry = await kv.get(workerId);
    if (!entry || entry.operation !== 'PUT') throw new CodedError('worker_not_found', `worker ${workerId} does not exist`);
    return { record: entry.json<WorkerRecord>(), revision: entry.revision };
  }

  const subscriptions: Subscription[] = [
    serveRpc<CreateWorkerRequestType, CreateWorkerResultType>(
      nc,
      subjects.rpc.createWorker,
      async (request) => {
        const workerId = request.worker_id ?? `wrk_${randomBytes(12).toString('base64url')}`;
        const token = generateWorkerToken();
        const record: WorkerRecord = {
          worker_id: workerId,
          owner: request.owner,
          status: 'pending',
          token_hash: hashWorkerToken(token),
          ...(request.decision_policy ? { decision_policy: request.decision_policy } : {}),
          updated_at: new Date().toISOString(),
        };
        try {
          await kv.create(workerId, JSON.stringify(record));
        } catch (err) {
          throw new CodedError('conflict', `worker ${workerId} already exists`, undefined, { cause: err });
        }
        log.info({ workerId, owner: request.owner }, 'worker created');
        return { worker_id: workerId, token };
      },
      { logger: log, queue, checker: createChecker(CreateWorkerRequest) },
    ),
    serveRpc<{ worker_id: string }, Omit<WorkerRecord, 'token_hash'>>(
      nc,
      subjects.rpc.getWorker,
      async (request) => {
        const { token_hash: _hash, ...visible } = (await read(request.worker_id)).record;
        return visible;
      },
      { logger: log, queue, checker: createChecker(GetWorkerRequest) },
    ),
    serveRpc<SetWorkerStatusRequestType, Omit<WorkerRecord, 'token_hash'>>(
      nc,
      subjects.rpc.setWorkerStatus,
      async (request) => {
        // Compare-and-set on the revision: two concurrent changes cannot both win. A write that
        // only records liveness may slip in between; then read again and retry.
        for (let attempt = 1; ; attempt++) {
          const { record, revision } = await read(request.worker_id);
          if (isEndedStatus(record.status) && record.status !== request.status) {
            throw new CodedError('worker_ended', `worker ${request.worker_id} is ${record.status}; an ended worker keeps its status`);
          }
          const next: WorkerRecord = { ...record, status: request.status, updated_at: new Date().toISOString() };
          try {
            await kv.update(request.worker_id, JSON.stringify(next), revision);
          } catch (err) {
            if (attempt < 3) continue;
            throw new CodedError('conflict', `worker ${request.worker_id} changed meanwhile; try again`, undefined, { cause: err });
          }
          log.info({ workerId: request.worker_id, status: request.status }, 'worker status changed');
          const { token_hash: _hash, ...visible } = next;
          return visible;
        }
      },
      { logger: log, queue, checker: createChecker(SetWorkerStatusRequest) },
    ),
    recordLiveness(nc, kv, log),
  ];
  return { stop: () => subscriptions.forEach((s) => s.unsubscribe()) };
}

/** A sidecar seen alive is recorded at most this often per worker (each write wakes every gateway's watch). */
const LIVENESS_WRITE_INTERVAL_MS = 10_000;

/**
 * Every decision poll says the sidecar is alive (`svc.workers.alive.<worker>`); the worker's
 * `last_seen_at` records it, at most every 10 s. A failed or raced write is simply skipped: the
 * next poll brings another chance.
 */
function recordLiveness(nc: NatsConnection, kv: KV, log: Logger): Subscription {
  const lastWritten = new Map<string, number>();
  return nc.subscribe(subjects.workerAliveAll, {
    queue: 'session',
    callback: (err, msg) => {
      if (err) return;
      const workerId = msg.subject.slice(subjects.workerAlive('').length);
      const now = Date.now();
      if (now - (lastWritten.get(workerId) ?? 0) < LIVENESS_WRITE_INTERVAL_MS) return;
      lastWritten.set(workerId, now);
      void (async () => {
        const entry = await kv.get(workerId);
        if (!entry || entry.operation !== 'PUT') return;
        const record = entry.json<WorkerRecord>();
        const seen: WorkerRecord = { ...record, last_seen_at: new Date(now).toISOString() };
        await kv.update(workerId, JSON.stringify(seen), entry.revision);
      })().catch((error: unknown) => log.debug({ err: error, workerId }, 'liveness not recorded this time'));
    },
  });
}
