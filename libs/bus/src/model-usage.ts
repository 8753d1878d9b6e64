import type { KV } from '@nats-io/kv';
import { EMPTY_MODEL_USAGE, kvBuckets, type ModelUsage } from '@svc/protocol';
import type { NatsConnection } from './connection.js';
import { openBucketWhenReachable } from './kv-buckets.js';
import type { Logger } from '@svc/service-kit';

/**
 * Every worker's model use as the model proxy measured it, in the `svc_model_usage` KV bucket:
 * shared by every gateway replica (a budget binds whichever replica a request reaches), read by
 * the worker's API view.
 */
export interface ModelUsageLedger {
  /** The worker's totals (zero when it has used nothing). */
  get(workerId: string): Promise<ModelUsage>;
  /** Applies `change` to the worker's totals, compare-and-set (concurrent requests all count), and returns the new totals. */
  update(workerId: string, change: (usage: ModelUsage) => ModelUsage): Promise<ModelUsage>;
}

export async function createModelUsageLedger(nc: NatsConnection, logger: Logger): Promise<ModelUsageLedger> {
  const kv: KV = await openBucketWhenReachable(nc, kvBuckets.modelUsage, logger);

  async function read(workerId: string): Promise<{ usage: ModelUsage; revision: number }> {
    const entry = await kv.get(workerId);
    if (!entry || entry.operation !== 'PUT') return { usage: EMPTY_MODEL_USAGE, revision: 0 };
    return { usage: { ...EMPTY_MODEL_USAGE, ...entry.json<ModelUsage>() }, revision: entry.revision };
  }

  return {
    get: async (workerId) => (await read(workerId)).usage,
    async update(workerId, change) {
      for (let attempt = 1; ; attempt++) {
        const { usage, revision } = await read(workerId);
        const next = change(usage);
        try {
          if (revision === 0) await kv.create(workerId, JSON.stringify(next));
          else await kv.update(workerId, JSON.stringify(next), revision);
          return next;
        } catch (err) {
          // Another request's totals landed first: read them and apply this change again.
          if (attempt >= 20) throw err;
        }
      }
    },
  };
}
