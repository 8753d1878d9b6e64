import type { KV } from '@nats-io/kv';
import { kvBuckets } from '@svc/protocol';
import type { NatsConnection } from './connection.js';
import { openBucketWhenReachable } from './kv-buckets.js';
import type { Logger } from '@svc/service-kit';

/** The `svc_workers` KV bucket (made if missing): its writer is the session service's worker registry. */
export function openWorkerRecords(nc: NatsConnection, logger: Logger): Promise<KV> {
  return openBucketWhenReachable(nc, kvBuckets.workers, logger);
}

export type { KV } from '@nats-io/kv';
