import { Kvm, type KV } from '@nats-io/kv';
import { kvBuckets } from '@svc/protocol';
import type { NatsConnection } from './connection.js';

/** The `svc_workers` KV bucket (made if missing): its writer is the session service's worker registry. */
export function openWorkerRecords(nc: NatsConnection): Promise<KV> {
  return new Kvm(nc).create(kvBuckets.workers, { history: 1 });
}

export type { KV } from '@nats-io/kv';
