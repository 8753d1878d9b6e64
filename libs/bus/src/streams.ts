import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type StreamConfig } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { kvBuckets, streams } from '@svc/protocol';
import { retryWithBackoff, type Logger } from '@svc/service-kit';
import { isBusUnavailable } from './connection.js';

/** The JetStream streams the design needs, from the protocol's constants. */
export function streamConfigs(): Array<Partial<StreamConfig> & { name: string }> {
  return [
    {
      name: streams.incomingEvents.name,
      subjects: [...streams.incomingEvents.subjects],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      duplicate_window: nanos(streams.incomingEvents.duplicateWindowMs),
      discard: DiscardPolicy.New,
    },
    {
      name: streams.storedEvents.name,
      subjects: [...streams.storedEvents.subjects],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(streams.storedEvents.maxAgeMs),
      max_bytes: streams.storedEvents.maxBytes,
      discard: DiscardPolicy.Old,
    },
    {
      name: streams.lifecycleEvents.name,
      subjects: [...streams.lifecycleEvents.subjects],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(streams.lifecycleEvents.maxAgeMs),
      max_bytes: streams.lifecycleEvents.maxBytes,
      discard: DiscardPolicy.Old,
    },
    {
      name: streams.webhooks.name,
      subjects: [...streams.webhooks.subjects],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      max_age: nanos(streams.webhooks.maxAgeMs),
      duplicate_window: nanos(streams.webhooks.duplicateWindowMs),
      discard: DiscardPolicy.Old,
    },
  ];
}

/**
 * Declares every stream and KV bucket; safe to call from every replica at every start:
 * a missing stream is created, an existing one is updated to the current settings.
 */
export async function ensureStreams(nc: NatsConnection): Promise<void> {
  const jsm = await jetstreamManager(nc);
  for (const config of streamConfigs()) {
    const existing = await jsm.streams.info(config.name).catch((err: unknown) => {
      if (err instanceof Error && err.name === 'StreamNotFoundError') return undefined;
      throw err;
    });
    if (existing) await jsm.streams.update(config.name, config);
    else {
      await jsm.streams.add(config).catch(async (err: unknown) => {
        // Another replica created it between our info and add: converge on its settings.
        if (err instanceof Error && /already in use/i.test(err.message)) await jsm.streams.update(config.name, config);
        else throw err;
      });
    }
  }
  const kvm = new Kvm(nc);
  await kvm.create(kvBuckets.workers, { history: 1 });
}

/** Incoming messages not yet stored (the work queue's length): what event-ingest still has to do. */
export async function incomingBacklog(nc: NatsConnection): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info(streams.incomingEvents.name)).state.messages;
}

/** `ensureStreams` at a service's start, tried until NATS is there (a service's `prepare`). */
export function ensureStreamsWhenReachable(nc: NatsConnection, logger: Logger): Promise<void> {
  return retryWithBackoff('creating the streams', () => ensureStreams(nc), { logger, retryable: isBusUnavailable });
}
