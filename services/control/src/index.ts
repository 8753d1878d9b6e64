import { createWorkerDirectory } from '@svc/auth';
import { createDurablePublisher, createIncomingEventPublisher, serveHealth, serveRpc, subscribeStoredEvents, type NatsConnection } from '@svc/bus';
import {
  agentExitCodeOf,
  ControlRequestsRpc,
  createChecker,
  DecideRequest,
  DEFAULT_DECISION_POLICY,
  GetWorkerRequest,
  POLICY_SOURCE,
  WORKER_POLICY_SOURCE,
  subjects,
  withdrawnRequestId,
  type ControlRequestsRpcType,
  type DecideRequestType,
  type DecisionPolicy,
  type ListResponseOf,
  type PermissionRule,
  type StoredEvent,
  type StoredEventBatchType,
} from '@svc/protocol';
import { integerSetting, optionalStringSetting, readConfig, type ConfigOf, type Logger, type RunningService } from '@svc/service-kit';
import {
  createControlRequestLog,
  createWebhookStore,
  prepareTables,
  type StoreUse,
  type StoredRequest,
  pingDatabase,
  type Database,
  type Kysely,
} from '@svc/store';
import { createDeadlines } from './deadlines.js';
import { createDecisions, deadlineOf } from './decisions.js';
import { startAuditTrail } from './audit.js';
import { deliverNotifications } from './webhooks/deliveries.js';
import { createNotifier, fanOutFacts } from './webhooks/notifications.js';
import { serveWebhookRpcs } from './webhooks/subscriptions.js';
import { createLinksFor } from './webhooks/links.js';
import { createWebhookDestinations } from './webhooks/destinations.js';
import { auditSettings, userAssertionSettings, webhookAddressSettings } from './config.js';

export { TIMEOUT_DECIDER } from './decisions.js';
export { localAuditKey } from './audit.js';
export { auditSettings } from './config.js';

/** The control service's own settings (docs/configuration.md). */
export const controlSettings = {
  /** Webhooks (docs/webhooks.md): the pause after a delivery's first failed try; it doubles after each. */
  webhookRetryFirstMs: integerSetting('SVC_WEBHOOK_RETRY_FIRST_MS', { default: 5_000, min: 10 }),
  /** The longest pause between two tries. */
  webhookRetryMaxMs: integerSetting('SVC_WEBHOOK_RETRY_MAX_MS', { default: 10 * 60_000, min: 10 }),
  /** How long a failing delivery is retried before its subscription is disabled. */
  webhookRetryWindowS: integerSetting('SVC_WEBHOOK_RETRY_WINDOW_S', { default: 24 * 60 * 60, min: 1 }),
  /** Signs the decision links of notifications; the gateway has the same key. Unset: no links. */
  decisionLinkKey: optionalStringSetting('SVC_DECISION_LINK_KEY'),
  /** The gateway's address as people reach it, which links point to. Unset: no links. */
  publicUrl: optionalStringSetting('SVC_GATEWAY_PUBLIC_URL'),
  ...webhookAddressSettings,
  ...auditSettings,
  ...userAssertionSettings,
};

export interface ControlDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
  /** Default: read from the environment. */
  config?: ConfigOf<typeof controlSettings>;
}

/** The store's tables this service needs: it reads the event log (its control requests and decisions) and owns the audit trail. */
export const tables: StoreUse = { owns: 'audit', reads: ['event-log'] };

/**
 * Starts the control service: stores decisions (first wins, across replicas), keeps every open
 * request's deadline, answers the open-requests and permission-rules queries.
 */
export async function start(deps: ControlDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'control' });
  await prepareTables(deps.db, tables);
  const requests = createControlRequestLog(deps.db);
  // Hands over decisions stored here (each carries its own source); it publishes none of its own.
  const incoming = createIncomingEventPublisher(deps.nc, POLICY_SOURCE);
  const workers = await createWorkerDirectory(deps.nc, log);

  // The workers' records as a watch keeps them (a decision needs its worker's deadline policy
  // before it reaches the store; a KV read would be one more round trip).
  async function policyOf(workerId: string): Promise<DecisionPolicy> {
    return (await workers.get(workerId))?.decision_policy ?? DEFAULT_DECISION_POLICY;
  }

  const config = deps.config ?? readConfig(controlSettings);
  // The audit trail (docs/audit.md): keyed records, published heads; it serves append, list and verify.
  const auditTrail = await startAuditTrail({ nc: deps.nc, db: deps.db, logger: log, instance: deps.instance, config, queue: 'control' });
  const audit = auditTrail.recorder;
  if (!config.userAssertionKey) log.warn("SVC_USER_ASSERTION_KEY is not set: every person's decision is refused until it is (docs/nats-security.md)");
  const decisions = createDecisions({ db: deps.db, requests, incoming, policyOf, audit, userAssertionKey: config.userAssertionKey, logger: log });
  const publisher = createDurablePublisher(deps.nc);
  const notifier = createNotifier({ publisher, workers, logger: log });
  const notifyFailed = (err: unknown) => log.error({ err }, 'could not queue a webhook notification');
  const deadlines = createDeadlines({
    policyOf,
    expire: decisions.expire,
    near: (request, deadline) => void notifier.deadlineNear(request, deadline).catch(notifyFailed),
    logger: log,
  });

  // Requests and withdrawals as event-ingest stores them. Subscribed before the store is read,
  // so a request stored in between is seen at least once (watching twice is harmless).
  const controlEvents = deps.nc.subscribe(subjects.controlEventsAll, {
    callback: (err, msg) => {
      if (err) return;
      const batch = msg.json<StoredEventBatchType>();
      // A request the sidecar's rules decided at once comes with its decision: nobody is asked.
      const decidedHere = new Set(
        batch.events.filter((event) => event.type === 'control_response').map((event) => (event as StoredEvent<'control_response'>).data.request_id),
      );
      for (const event of batch.events) {
        const withdrawn = withdrawnRequestId(event);
        if (withdrawn !== undefined) deadlines.cancel(event.worker_id, withdrawn);
        else if (event.type === 'control_response') {
          const decision = event as StoredEvent<'control_response'>;
          deadlines.cancel(event.worker_id, decision.data.request_id);
          // The sidecar's rules decided: recorded by whichever replica comes first (the fact's id makes it once).
          if (decision.source === WORKER_POLICY_SOURCE) recordPolicyDecision(decision);
          notifier.decided(decision).catch(notifyFailed);
        } else if (event.type === 'control_request') {
          const request = { event: event as StoredEvent<'control_request'>, storedAt: new Date() };
          watchRequest(request, decidedHere.has(request.event.data.request_id)).catch((error: unknown) =>
            log.error({ err: error, worker_id: event.worker_id }, 'could not watch a control request'),
          );
        }
      }
    },
  });
  /**
   * A new request gets a deadline and, unless its decision came with it, a notification. A
   * repeat of an id the worker used before is no request of its own: a decision applies to the
   * first (what the store, the rules and the audit trail go by), so nobody is asked about another.
   */
  async function watchRequest(request: StoredRequest, decidedAlready: boolean): Promise<void> {
    const first = await requests.findRequest(request.event.worker_id, request.event.data.request_id);
    if (first && first.event.id !== request.event.id) return;
    await deadlines.watch(request);
    if (!decidedAlready)
      await notifier.needsDecision(request.event, new Date(deadlineOf(request, await policyOf(request.event.worker_id)))).catch(notifyFailed);
  }
  function recordPolicyDecision(decision: StoredEvent<'control_response'>): void {
    requests
      .findRequest(decision.worker_id, decision.data.request_id)
      .then((found) => (found ? audit.decision(found.event, decision, 'policy') : undefined))
      .catch((err: unknown) => log.error({ err, worker_id: decision.worker_id }, 'could not record a policy decision in the audit trail'));
  }

  const open = await requests.allOpenRequests();
  await Promise.all(open.map((request) => deadlines.watch(request)));
  if (open.length > 0) log.info({ open: open.length }, 'keeping the deadlines of open requests');

  const queue = 'control';
  const rpcs = [
    // Who decides is the user assertion's to say, checked by `decide` before anything else.
    serveRpc<DecideRequestType, StoredEvent<'control_response'>>(
      deps.nc,
      subjects.rpc.decide,
      async (request, context) => {
        const decided = await decisions.decide(request, context.afterReply);
        deadlines.cancel(request.worker_id, request.decision.request_id);
        return decided;
      },
      { logger: log, queue, checker: createChecker(DecideRequest) },
    ),
    serveRpc<ControlRequestsRpcType, ListResponseOf<StoredEvent<'control_request'>>>(
      deps.nc,
      subjects.rpc.controlRequests,
      async (request) => {
        const items = (await requests.listRequests(request.worker_id, request.state)).map((r) => r.event);
        return { items, total: items.length };
      },
      { logger: log, queue, checker: createChecker(ControlRequestsRpc) },
    ),
    serveRpc<{ worker_id: string }, ListResponseOf<PermissionRule>>(
      deps.nc,
      subjects.rpc.permissionRules,
      async (request) => {
        const items = await requests.permissionRules(request.worker_id);
        return { items, total: items.length };
      },
      { logger: log, queue, checker: createChecker(GetWorkerRequest) },
    ),
  ];
  // Webhooks (docs/webhooks.md): facts fanned out to subscriptions, deliveries tried until done.
  const webhookStore = createWebhookStore(deps.db);
  const destinations = await createWebhookDestinations(config);
  rpcs.push(...serveWebhookRpcs({ nc: deps.nc, webhooks: webhookStore, destinations, logger: log, queue }));
  const ended = await subscribeStoredEvents(deps.nc, {
    durableName: 'control-webhooks-ended',
    lifecycleOnly: true,
    from: 'new',
    handler: (event) => notifier.ended(event, agentExitCodeOf(event) ?? 1),
    logger: log,
  });
  const fanOut = await fanOutFacts({
    nc: deps.nc,
    publisher,
    webhooks: webhookStore,
    linksFor: config.decisionLinkKey && config.publicUrl ? createLinksFor(config.decisionLinkKey, config.publicUrl) : () => undefined,
    logger: log,
  });
  const deliveries = await deliverNotifications({
    nc: deps.nc,
    webhooks: webhookStore,
    destinations,
    retry: { firstMs: config.webhookRetryFirstMs, maxMs: config.webhookRetryMaxMs, windowMs: config.webhookRetryWindowS * 1000 },
    logger: log,
  });
  const health = serveHealth(deps.nc, 'control', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  return {
    async stop() {
      health.unsubscribe();
      for (const rpc of rpcs) rpc.unsubscribe();
      controlEvents.unsubscribe();
      // Its last head is published while NATS is still there.
      await auditTrail.stop();
      await Promise.all([ended.stop(), fanOut.stop(), deliveries.stop()]);
      publisher.close();
      deadlines.stop();
      incoming.close();
      await workers.stop();
    },
  };
}
