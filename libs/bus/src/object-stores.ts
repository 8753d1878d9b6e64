import { Objm, type ObjectStore } from '@nats-io/obj';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { StorageType } from '@nats-io/jetstream';
import { CodedError } from '@svc/protocol';

/**
 * An object store of svc's, made if missing (with `replicas`), else taken as it is. Several
 * services make them at start, with different replicas (ensureStreams asks for
 * SVC_JETSTREAM_REPLICAS, the others for 1): when another made it between our look and our
 * create, JetStream answers "already in use", and we take theirs (ensureStreams then brings it
 * to the replicas asked).
 */
export async function openObjectStore(nc: NatsConnection, bucket: string, options: { keptMs: number; replicas: number }): Promise<ObjectStore> {
  const objm = new Objm(nc);
  try {
    return await objm.create(bucket, { ttl: nanos(options.keptMs), replicas: options.replicas, storage: StorageType.File });
  } catch (err) {
    if (err instanceof Error && /already in use/i.test(err.message)) return takeObjectStoreMadeElsewhere(objm, bucket);
    throw err;
  }
}

/**
 * Opens an object store another service made. On a cluster a store made a moment ago may not
 * answer yet (its servers still placing it): its name is in use, yet it is not found. That is
 * NATS not ready, waited out as such (`isBusUnavailable`), not a reason for a service to die at
 * its start.
 */
export async function takeObjectStoreMadeElsewhere(objm: Objm, bucket: string): Promise<ObjectStore> {
  try {
    return await objm.open(bucket);
  } catch (err) {
    if (err instanceof Error && /not found/i.test(err.message))
      throw new CodedError('bus_unavailable', `the object store ${bucket} is being made by another service and does not answer yet`, undefined, { cause: err });
    throw err;
  }
}
