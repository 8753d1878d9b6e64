import type { KV } from '@nats-io/kv';
import { kvBuckets } from '@svc/protocol';
import type { NatsConnection } from './connection.js';
import { openBucket } from './kv-buckets.js';

/** The `svc_workers` KV bucket (made if missing): its writer is the session service's worker registry. */
export function openWorkerRecords(nc: NatsConnection): Promise<KV> {
  return openBucket(nc, kvBuckets.workers);
}

export type { KV } from '@nats-io/kv';
