import { openWorkerRecords, type NatsConnection } from '@svc/bus';
import { CodedError, createChecker, isEndedStatus, WorkerRecordSchema, type WorkerRecord } from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import { createWorkerTokenVerifier, hashWorkerToken } from './worker-token.js';

/**
 * The workers as the gateway and the control service see them, from the `svc_workers` KV bucket:
 * a watch keeps every replica's copy current within milliseconds (a revoked token is refused well
 * within 1 s), and a worker not seen yet is read from the bucket directly (a gateway that just
 * started). Worker tokens are checked here too, against the records (the token primitives are in
 * `worker-token.ts`): whose a token is and whether it still counts are one question about the
 * directory.
 */
export interface WorkerDirectory {
  /** The worker's record, or undefined when there is no such worker. */
  get(workerId: string): Promise<WorkerRecord | undefined>;
  /** The record as the watch last delivered it, without asking the bucket: undefined when not seen yet. */
  known(workerId: string): WorkerRecord | undefined;
  /**
   * Returns if `token` is the current token of `workerId`, whose record (from `known` or `get`)
   * is given; else throws the refusal: `worker_not_found` (no record), `worker_ended` (its
   * token, but the worker ended: revoked), `forbidden` (another worker's token), `unauthorized`
   * (no worker's).
   */
  checkWorkerToken(workerId: string, token: string, record: WorkerRecord | undefined): void;
  /** Every record the watch has delivered (the bucket's workers, once the watch has caught up). */
  all(): WorkerRecord[];
  stop(): Promise<void>;
}

const recordChecker = createChecker<WorkerRecord>(WorkerRecordSchema);

export async function createWorkerDirectory(nc: NatsConnection, logger: Logger): Promise<WorkerDirectory> {
  const log = logger.child({ component: 'worker-directory' });
  const kv = await openWorkerRecords(nc, log);
  const records = new Map<string, WorkerRecord>();
  const byTokenHash = new Map<string, string>();
  // Remembers the tokens it accepted; the record (its current hash, its status) is still looked
  // at on every check, so a new token or an ended worker is seen at once.
  const tokens = createWorkerTokenVerifier();

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
    all: () => [...records.values()],
    checkWorkerToken(workerId, token, record) {
      // Worker ids are random (96 bits): saying that one does not exist reveals nothing useful.
      if (!record) throw new CodedError('worker_not_found', `worker ${workerId} does not exist`);
      if (record.token_hash && tokens.matches(token, record.token_hash)) {
        if (isEndedStatus(record.status)) throw new CodedError('worker_ended', `worker ${workerId} has ended (${record.status}); its token is revoked`);
        return;
      }
      const owner = byTokenHash.get(hashWorkerToken(token));
      if (owner && owner !== workerId) throw new CodedError('forbidden', 'this worker token is not valid for this worker');
      throw new CodedError('unauthorized', 'the worker token is not valid');
    },
    async stop() {
      watch.stop();
    },
  };
}
