import type { Subscription } from '@nats-io/transport-node';
import { subscribeStoredEvents, type DurablePublisher, type NatsConnection } from '@svc/bus';
import { activityOf, workerEndingExitCodeOf, type StoredEvent } from '@svc/protocol';
import type { ConfigOf, Logger } from '@svc/service-kit';
import type { Database, Kysely } from '@svc/store';
import type { controlSettings } from '../config.js';
import { deliverNotifications } from './deliveries.js';
import { createWebhookDestinations } from './destinations.js';
import { createLinksFor } from './links.js';
import { fanOutFacts, type Notifier } from './notifications.js';
import { serveWebhookRpcs } from './subscriptions.js';
import { createWebhookStore } from './webhook-store.js';

export interface WebhooksDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  publisher: DurablePublisher;
  notifier: Notifier;
  config: ConfigOf<typeof controlSettings>;
  logger: Logger;
  queue: string;
}

export interface RunningWebhooks {
  rpcs: Subscription[];
  stop(): Promise<void>;
}

/**
 * Webhooks (docs/webhooks.md): the subscriptions' requests, the facts fanned out to
 * subscriptions, deliveries tried until done, and the end of each worker noticed.
 */
export async function startWebhooks(deps: WebhooksDeps): Promise<RunningWebhooks> {
  const { nc, config, logger: log } = deps;
  const webhooks = createWebhookStore(deps.db);
  const destinations = await createWebhookDestinations(config);
  const rpcs = serveWebhookRpcs({ nc, webhooks, destinations, logger: log, queue: deps.queue });
  const ended = await subscribeStoredEvents(nc, {
    durableName: 'control-webhooks-ended',
    lifecycleOnly: true,
    from: 'new',
    handler: (event) => notifyOfLife(deps.notifier, event),
    logger: log,
  });
  const fanOut = await fanOutFacts({
    nc,
    publisher: deps.publisher,
    webhooks,
    linksFor: config.decisionLinkKey && config.publicUrl ? createLinksFor(config.decisionLinkKey, config.publicUrl) : () => undefined,
    logger: log,
  });
  const deliveries = await deliverNotifications({
    nc,
    webhooks,
    destinations,
    retry: { firstMs: config.webhookRetryFirstMs, maxMs: config.webhookRetryMaxMs, windowMs: config.webhookRetryWindowS * 1000 },
    logger: log,
  });
  return {
    rpcs,
    async stop() {
      for (const rpc of rpcs) rpc.unsubscribe();
      await Promise.all([ended.stop(), fanOut.stop(), deliveries.stop()]);
    },
  };
}

/**
 * An event of a worker's life, told: the agent's exit (`worker.ended`), unless a message resumes
 * it (`details.resumable`); the agent idle, waiting for a message (`worker.idle`).
 */
async function notifyOfLife(notifier: Notifier, event: StoredEvent): Promise<void> {
  if (activityOf(event) === 'idle') return notifier.idle(event);
  const code = workerEndingExitCodeOf(event);
  if (code !== undefined) await notifier.ended(event, code);
}
