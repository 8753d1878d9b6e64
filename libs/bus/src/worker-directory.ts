import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from './connection.js';
import { createChecker, kvBuckets, WorkerRecordSchema, type WorkerRecord } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';

/**
 * The gateway's view of the workers, from the `svc_workers` KV bucket: a watch keeps every
 * replica's copy current within milliseconds (a revoked token is refused well within 1 s), and
 * a worker not seen yet is read from the bucket directly (a gateway that just started).
 */
export interface WorkerDirectory {
  /** The worker's record, or undefined when there is no such worker. */
  get(workerId: string): Promise<WorkerRecord | undefined>;
  /** The record as the watch last delivered it, without asking the bucket: undefined when not seen yet. */
  known(workerId: string): WorkerRecord | undefined;
  /** Which worker a token hash belongs to, among the workers seen so far. */
  workerOfTokenHash(tokenHash: string): string | undefined;
  stop(): Promise<void>;
}

const recordChecker = createChecker<WorkerRecord>(WorkerRecordSchema);

/** The `svc_workers` KV bucket (made if missing): its writer is the session service's worker registry. */
export function openWorkerRecords(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(kvBuckets.workers, { history: 1 });
}

export type { KV } from '@nats-io/kv';

export async function createWorkerDirectory(nc: NatsConnection, logger: Logger): Promise<WorkerDirectory> {
  const log = logger.child({ component: 'worker-directory' });
  const kv = await openWorkerRecords(nc);
  const records = new Map<string, WorkerRecord>();
  const byTokenHash = new Map<string, string>();

  function remember(workerId: string, record: WorkerRecord | undefined): void {
    const previous = records.get(workerId);
    if (previous?.token_hash) byTokenHash.delete(previous.token_hash);
    if (!record) {
      records.delete(workerId);
      return;
    }
    records.set(workerId, record);
    if (record.token_hash) byTokenHash.set(record.token_hash, workerId);
  }

  function parse(key: string, value: Uint8Array): WorkerRecord | undefined {
    try {
      const checked = recordChecker.check(JSON.parse(new TextDecoder().decode(value)));
      if (checked.ok && checked.value.worker_id === key) return checked.value;
      log.error({ key }, 'ignoring an invalid worker record');
    } catch {
      log.error({ key }, 'ignoring a worker record that is not JSON');
    }
    return undefined;
  }

  const watch = await kv.watch();
  void (async () => {
    for await (const entry of watch) {
      remember(entry.key, entry.operation === 'PUT' ? parse(entry.key, entry.value) : undefined);
    }
  })().catch((err: unknown) => log.error({ err }, 'worker watch ended'));

  return {
    async get(workerId) {
      const known = records.get(workerId);
      if (known) return known;
      const entry = await kv.get(workerId);
      if (!entry || entry.operation !== 'PUT') return undefined;
      const record = parse(workerId, entry.value);
      // The watch may have delivered a newer revision meanwhile; it wins.
      if (record && !records.has(workerId)) remember(workerId, record);
      return records.get(workerId) ?? record;
    },
    known: (workerId) => records.get(workerId),
    workerOfTokenHash: (tokenHash) => byTokenHash.get(tokenHash),
    async stop() {
      watch.stop();
    },
  };
}
