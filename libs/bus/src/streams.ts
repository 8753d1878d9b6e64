import { DiscardPolicy, jetstreamManager, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { kvBuckets, objectBuckets, streams } from '@svc/protocol';
import { integerSetting, retryWithBackoff, type Logger } from '@svc/service-kit';
import { isBusUnavailable } from './connection.js';
import { openBucket } from './kv-buckets.js';
import { openMessageImageStore } from './message-images.js';
import { openWorkspacePatchStore } from './workspace-changes.js';

/** The settings of the services that declare the streams (control, event-ingest). */
export const streamSettings = {
  /**
   * How many servers keep each stream and KV bucket: 1 for a single nats-server; 3 on a
   * three-server cluster, so a server's loss (and its disk's) loses nothing (docs/scale-out.md).
   */
  jetstreamReplicas: integerSetting('SVC_JETSTREAM_REPLICAS', { default: 1, min: 1, max: 5 }),
};

export interface StreamOptions {
  /** Each stream's and bucket's replicas (`SVC_JETSTREAM_REPLICAS`); 1 when not given. */
  replicas?: number;
  /** Told of a stream made once (the audit heads') that is not as declared: NATS's operator must change it. */
  logger?: Logger;
}

/** The KV buckets svc keeps (each is a stream named `KV_<bucket>`). */
const KV_BUCKETS = [kvBuckets.workers, kvBuckets.modelUsage, kvBuckets.workspaceChanges];

/** The JetStream streams the design needs, from the protocol's constants. */
function streamConfigs({ replicas = 1 }: StreamOptions = {}): Array<Partial<StreamConfig> & { name: string }> {
  return withReplicas(replicas, [
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
    {
      // The audit trail's heads (docs/audit.md): no limit, and no message deleted or purged, ever.
      name: streams.auditHeads.name,
      subjects: [...streams.auditHeads.subjects],
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      duplicate_window: nanos(streams.auditHeads.duplicateWindowMs),
      deny_delete: true,
      deny_purge: true,
    },
  ]);
}

const withReplicas = (replicas: number, configs: Array<Partial<StreamConfig> & { name: string }>) =>
  configs.map((config) => ({ ...config, num_replicas: replicas }));

/**
 * Streams a service makes when missing but never updates: an update could set limits that drop
 * what they keep, so no service's NATS user may (docs/nats-security.md); only NATS's operator
 * changes them (docs/audit.md).
 */
const MADE_ONCE: ReadonlySet<string> = new Set([streams.auditHeads.name]);

/**
 * Declares every stream, KV bucket and object store; safe to call from every replica at every start:
 * a missing stream is created, an existing one is updated to the current settings (its
 * replicas among them: JetStream moves it to more servers, or fewer, keeping its messages),
 * except the audit heads' stream, which is left as it is (a warning says how it differs).
 * Resolves with the replicas they have: 1 on a single server, whatever was asked.
 */
export async function ensureStreams(nc: NatsConnection, options: StreamOptions = {}): Promise<{ replicas: number }> {
  // A single server (not a cluster) has no other to copy to: it would record 3 and keep 1.
  const replicas = nc.info?.cluster ? (options.replicas ?? 1) : 1;
  const jsm = await jetstreamManager(nc);
  for (const config of streamConfigs({ replicas })) {
    const differences = await ensureStream(jsm, config).catch(explainReplicas(config.name, replicas));
    if (differences.length > 0)
      options.logger?.warn(
        { stream: config.name, differences },
        `${config.name} is not as svc declares it (${differences.join('; ')}), and no service may update it: NATS's operator can (nats stream edit ${config.name}), setting no limit that would drop what it keeps (docs/audit.md)`,
      );
  }
  for (const bucket of KV_BUCKETS) {
    // An existing bucket is taken as it is (a service that only uses one may have made it, with
    // one replica): its stream is brought to the replicas asked for here.
    const status = await openBucket(nc, bucket, replicas)
      .then((kv) => kv.status())
      .catch(explainReplicas(`KV_${bucket}`, replicas));
    const { config } = status.streamInfo;
    if (status.replicas !== replicas)
      await jsm.streams.update(config.name, { ...config, num_replicas: replicas }).catch(explainReplicas(config.name, replicas));
  }
  // The same for the object stores (message images, workspace patches).
  for (const [bucket, open] of [
    [objectBuckets.messageImages, openMessageImageStore],
    [objectBuckets.workspacePatches, openWorkspacePatchStore],
  ] as const) {
    const status = await open(nc, replicas)
      .then((store) => store.status())
      .catch(explainReplicas(`OBJ_${bucket}`, replicas));
    if (status.replicas !== replicas) {
      const { config } = status.streamInfo;
      await jsm.streams.update(config.name, { ...config, num_replicas: replicas }).catch(explainReplicas(config.name, replicas));
    }
  }
  return { replicas };
}

/**
 * NATS cannot place a stream on as many servers as asked: the cluster is smaller, or some of
 * its servers are away (a rolling restart). The service waits, saying why, rather than exit.
 */
class StreamPlacementError extends Error {
  override readonly name = 'StreamPlacementError';
}

/** A stream refused for its replicas says which setting asked for them, and what NATS it needs. */
const explainReplicas =
  (stream: string, replicas: number) =>
  (err: unknown): never => {
    if (replicas > 1 && err instanceof Error && /replica|clustered|peers|resources/i.test(err.message)) {
      throw new StreamPlacementError(
        `SVC_JETSTREAM_REPLICAS=${replicas}: NATS refused ${stream} with ${replicas} replicas (${err.message}); it needs a cluster of at least ${replicas} servers with JetStream, all of them up, or set it to 1 for a single server`,
        { cause: err },
      );
    }
    throw err;
  };

/**
 * Creates a missing stream, or updates an existing one to `config`; a stream made once
 * (`MADE_ONCE`) is not updated. Resolves with how it differs from `config` afterwards (`num_replicas: 1 (asked 3)`).
 */
async function ensureStream(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }): Promise<string[]> {
  const existing = await jsm.streams.info(config.name).catch((err: unknown) => {
    if (err instanceof Error && err.name === 'StreamNotFoundError') return undefined;
    throw err;
  });
  if (existing) return converge(jsm, config, existing.config);
  try {
    await jsm.streams.add(config);
    return [];
  } catch (err) {
    // Another replica created it between our info and add: converge on its settings.
    if (err instanceof Error && /already in use/i.test(err.message)) return converge(jsm, config, (await jsm.streams.info(config.name)).config);
    throw err;
  }
}

/** An existing stream brought to `config`; one made once (`MADE_ONCE`) only compared with it. */
async function converge(jsm: JetStreamManager, config: Partial<StreamConfig> & { name: string }, existing: StreamConfig): Promise<string[]> {
  if (!MADE_ONCE.has(config.name)) {
    await jsm.streams.update(config.name, config);
    return [];
  }
  const setting = (name: string) => JSON.stringify(existing[name as keyof StreamConfig]) ?? '(unset)';
  return Object.entries(config)
    .filter(([name, value]) => setting(name) !== JSON.stringify(value))
    .map(([name, value]) => `${name}: ${setting(name)} (asked ${JSON.stringify(value)})`);
}

/** Incoming messages not yet stored (the work queue's length): what event-ingest still has to do. */
export async function incomingBacklog(nc: NatsConnection): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return (await jsm.streams.info(streams.incomingEvents.name)).state.messages;
}

/**
 * A service that reads the streams but does not declare them (session, gateway) waits at its
 * start until event-ingest or control has: started together (a Helm release, a test's stack), it
 * may come first, and a consumer of a missing stream fails at once (`consumeLasting`).
 */
export async function streamsWhenDeclared(nc: NatsConnection, logger: Logger): Promise<void> {
  const names = streamConfigs({ replicas: 1 }).map((config) => config.name);
  await retryWithBackoff(
    'waiting for event-ingest or control to declare the streams',
    async () => {
      const jsm = await jetstreamManager(nc);
      for (const name of names) await jsm.streams.info(name);
    },
    { logger, retryable: (err) => isBusUnavailable(err) || (err instanceof Error && err.name === 'StreamNotFoundError') },
  );
}

/** `ensureStreams` at a service's start, tried until NATS is there (a service's `prepare`). */
export async function ensureStreamsWhenReachable(nc: NatsConnection, logger: Logger, options: StreamOptions = {}): Promise<void> {
  const { replicas } = await retryWithBackoff('creating the streams', () => ensureStreams(nc, { logger, ...options }), {
    logger,
    retryable: (err) => isBusUnavailable(err) || err instanceof StreamPlacementError,
  });
  if (replicas < (options.replicas ?? 1)) {
    logger.warn(
      { asked: options.replicas, replicas },
      'SVC_JETSTREAM_REPLICAS asks for more than one copy of each stream, but NATS is a single server: each is kept once (a lost disk loses what waits there; docs/scale-out.md)',
    );
  }
}
