import { Kvm, type KV } from '@nats-io/kv';
import { retryWithBackoff, type Logger } from '@svc/service-kit';
import { isBusUnavailable, type NatsConnection } from './connection.js';

/**
 * A KV bucket of svc's, made if missing (with `replicas`), else taken as it is. Several services
 * make them at start, with different replicas (ensureStreams asks for SVC_JETSTREAM_REPLICAS,
 * the others for 1): when another made it between our look and our create, JetStream answers
 * "already in use with a different configuration", and we take theirs (ensureStreams then
 * brings it to the replicas asked).
 */
export async function openBucket(nc: NatsConnection, bucket: string, replicas = 1): Promise<KV> {
  const kvm = new Kvm(nc);
  return kvm.create(bucket, { history: 1, replicas }).catch((err: unknown) => {
    if (err instanceof Error && /already in use/i.test(err.message)) return kvm.open(bucket);
    throw err;
  });
}

/**
 * `openBucket` at a service's start: a JetStream that does not answer yet (NATS restarting, a
 * cluster electing leaders after a server's loss) is waited out with back-off, not a reason
 * for the process to die; a refusal still fails the start.
 */
export function openBucketWhenReachable(nc: NatsConnection, bucket: string, logger: Logger): Promise<KV> {
  return retryWithBackoff(`opening the KV bucket ${bucket}`, () => openBucket(nc, bucket), { logger, retryable: isBusUnavailable });
}
