import { createWorkerDirectory } from '@svc/auth';
import { createDurablePublisher, createIncomingEventPublisher, serveHealth, type NatsConnection } from '@svc/bus';
import { componentSource, DEFAULT_DECISION_POLICY, type DecisionPolicy } from '@svc/protocol';
import { readConfig, type ConfigOf, type Logger, type RunningService } from '@svc/service-kit';
import { createControlRequestLog, createRuleLog, prepareTables, type StoreUse, pingDatabase, type Database, type Kysely } from '@svc/store';
import { createApprovalFacts } from './approvals/approval-facts.js';
import { createApprovalStore } from './approvals/approval-store.js';
import { createEscalations } from './approvals/escalations.js';
import { createInbox } from './approvals/inbox.js';
import { createRules } from './approvals/rules.js';
import { createPolicy } from './policy/policy.js';
import { startAuditTrail } from './audit.js';
import { controlSettings } from './config.js';
import { watchControlEvents } from './control-events.js';
import { createDeadlines } from './deadlines.js';
import { createDecisionAppender } from './decision-appender.js';
import { createDecisions } from './decisions.js';
import { serveControlRpcs } from './rpcs.js';
import { createNotifier } from './webhooks/notifications.js';
import { startWebhooks } from './webhooks/webhooks.js';

export { localAuditKey } from './audit.js';
export { controlSettings } from './config.js';

export interface ControlDeps {
  nc: NatsConnection;
  db: Kysely<Database>;
  logger: Logger;
  instance: string;
  /** Default: read from the environment. */
  config?: ConfigOf<typeof controlSettings>;
}

/** The store's tables this service needs: it reads the event log (its control requests and decisions) and owns the audit trail and webhooks. */
export const tables: StoreUse = { owns: 'control', reads: ['event-ingest'] };

/**
 * Starts the control service: takes decisions (first wins, across replicas; appended by the
 * worker's one writer, event-ingest), keeps every open request's deadline, answers the
 * open-requests and permission-rules queries, keeps the audit trail and delivers webhooks.
 */
export async function start(deps: ControlDeps): Promise<RunningService> {
  const log = deps.logger.child({ service: 'control' });
  const { nc } = deps;
  await prepareTables(deps.db, tables);
  const config = deps.config ?? readConfig(controlSettings);
  const requests = createControlRequestLog(deps.db);
  const workers = await createWorkerDirectory(nc, log);
  // The workers' records as a watch keeps them (a KV read would be one more round trip).
  const policyOf = async (workerId: string): Promise<DecisionPolicy> => (await workers.get(workerId))?.decision_policy ?? DEFAULT_DECISION_POLICY;
  // The audit trail (docs/audit.md): keyed records, published heads; it serves append, list and verify.
  const auditTrail = await startAuditTrail({ nc, db: deps.db, logger: log, instance: deps.instance, config, queue: 'control' });
  const audit = auditTrail.recorder;
  if (!config.userAssertionKey) log.warn("SVC_USER_ASSERTION_KEY is not set: every person's decision is refused until it is (docs/nats-security.md)");
  const appendDecision = createDecisionAppender(nc, { waitMs: config.decisionWaitMs, tryMs: config.decisionTryMs }, log);
  const publisher = createDurablePublisher(nc);
  const notifier = createNotifier({ publisher, workers, logger: log, publicUrl: config.publicUrl });
  // Routed requests (docs/teams.md): votes toward a quorum and escalations, told to the history as `svc:approvals`.
  const approvals = createApprovalStore(deps.db);
  const facts = createApprovalFacts({ publisher: createIncomingEventPublisher(nc, componentSource('approvals')), audit, notifier });
  const decisions = createDecisions({
    requests,
    appendDecision,
    policyOf,
    workerOf: (workerId) => workers.get(workerId),
    approvals,
    facts,
    userAssertionKey: config.userAssertionKey,
    logger: log,
  });
  const escalations = createEscalations({ workers, requests, approvals, facts, policyOf, logger: log });
  const deadlines = createDeadlines({
    policyOf,
    expire: decisions.expire,
    near: (request, deadline) =>
      void notifier.deadlineNear(request, deadline).catch((err: unknown) => log.error({ err }, 'could not queue a webhook notification')),
    logger: log,
  });
  const controlEvents = await watchControlEvents({ nc, requests, deadlines, escalations, notifier, audit, policyOf, logger: log });
  const inbox = createInbox({ requests, workers, approvals, policyOf });
  const rules = createRules({ db: deps.db, requests: createRuleLog(deps.db), workers, audit });
  const policy = createPolicy({ requests, workers });
  const rpcs = serveControlRpcs({ nc, decisions, deadlines, requests, inbox, rules, policy, logger: log, queue: 'control' });
  const webhooks = await startWebhooks({ nc, db: deps.db, publisher, notifier, config, logger: log, queue: 'control' });
  const health = serveHealth(nc, 'control', { instance: deps.instance, logger: log, probeStore: () => pingDatabase(deps.db) });
  return {
    async stop() {
      health.unsubscribe();
      for (const rpc of rpcs) rpc.unsubscribe();
      controlEvents.unsubscribe();
      // Its last head is published while NATS is still there.
      await auditTrail.stop();
      await webhooks.stop();
      publisher.close();
      deadlines.stop();
      escalations.stop();
      await workers.stop();
    },
  };
}
