import type { Subscription } from '@nats-io/transport-node';
import type { NatsConnection } from '@svc/bus';
import {
  parseSource,
  subjects,
  withdrawnRequestId,
  type AuditChannel,
  type DecisionPolicy,
  type EventSource,
  type StoredEvent,
  type StoredEventBatchType,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import type { ControlRequestLog, StoredRequest } from '@svc/store';
import type { AuditRecorder } from './audit.js';
import type { Escalations } from './approvals/escalations.js';
import type { Deadlines } from './deadlines.js';
import { deadlineOf } from './decisions.js';
import type { Notifier } from './webhooks/notifications.js';

export interface ControlEventsDeps {
  nc: NatsConnection;
  requests: Pick<ControlRequestLog, 'findRequest' | 'allOpenRequests'>;
  deadlines: Deadlines;
  /** Routed requests' escalations (docs/teams.md): a clock like the deadline's. */
  escalations: Pick<Escalations, 'watch' | 'cancel'>;
  notifier: Notifier;
  audit: AuditRecorder;
  policyOf(workerId: string): Promise<DecisionPolicy>;
  logger: Logger;
}

/**
 * Follows the control events event-ingest repeats after each commit (`svc.control.events.<worker>`):
 * a new request gets a deadline and a notification, a decision or a withdrawal ends its
 * deadline, and every decision is audited. Subscribed before the store is read
 * for the open requests, so a request stored in between is seen at least once (watching twice
 * is harmless).
 */
export async function watchControlEvents(deps: ControlEventsDeps): Promise<Subscription> {
  const log = deps.logger;
  const notifyFailed = (err: unknown) => log.error({ err }, 'could not queue a webhook notification');
  const subscription = deps.nc.subscribe(subjects.controlEventsAll, {
    callback: (err, msg) => {
      if (!err) onBatch(msg.json<StoredEventBatchType>());
    },
  });

  function onBatch(batch: StoredEventBatchType): void {
    // A request the sidecar's rules decided at once comes with its decision: nobody is asked.
    const decidedHere = new Set(
      batch.events.filter((event) => event.type === 'control_response').map((event) => (event as StoredEvent<'control_response'>).data.request_id),
    );
    for (const event of batch.events) {
      const withdrawn = withdrawnRequestId(event);
      if (withdrawn !== undefined) {
        deps.deadlines.cancel(event.worker_id, withdrawn);
        deps.escalations.cancel(event.worker_id, withdrawn);
      } else if (event.type === 'control_response') onDecision(event as StoredEvent<'control_response'>);
      else if (event.type === 'control_request') {
        const request = { event: event as StoredEvent<'control_request'>, storedAt: new Date() };
        watchRequest(request, decidedHere.has(request.event.data.request_id)).catch((error: unknown) =>
          log.error({ err: error, worker_id: event.worker_id }, 'could not watch a control request'),
        );
      }
    }
  }

  function onDecision(decision: StoredEvent<'control_response'>): void {
    const request = deps.deadlines.cancel(decision.worker_id, decision.data.request_id);
    deps.escalations.cancel(decision.worker_id, decision.data.request_id);
    recordDecision(decision, request?.event);
    deps.notifier.decided(decision).catch(notifyFailed);
  }

  /**
   * A new request gets a deadline and, unless its decision came with it, a notification. A
   * repeat of an id the worker used before is no request of its own: a decision applies to the
   * first (what the store, the rules and the audit trail go by), so nobody is asked about another.
   */
  async function watchRequest(request: StoredRequest, decidedAlready: boolean): Promise<void> {
    const first = await deps.requests.findRequest(request.event.worker_id, request.event.data.request_id);
    if (first && first.event.id !== request.event.id) return;
    await deps.deadlines.watch(request);
    if (!decidedAlready) await deps.escalations.watch(request);
    if (!decidedAlready)
      await deps.notifier.needsDecision(request.event, new Date(deadlineOf(request, await deps.policyOf(request.event.worker_id)))).catch(notifyFailed);
  }

  /**
   * Every stored decision goes to the audit trail from its announcement, whoever took it and
   * whichever control replica asked for it (the first replica to record it wins: the fact's id
   * makes it once). So a decision whose asker crashed before its answer is recorded all the same.
   * The request decided is the one whose deadline this replica kept; the store is read for one
   * it did not.
   */
  function recordDecision(decision: StoredEvent<'control_response'>, request: StoredEvent<'control_request'> | undefined): void {
    const channel = auditChannelOf(decision.source);
    if (channel === undefined) return;
    (request ? Promise.resolve(request) : deps.requests.findRequest(decision.worker_id, decision.data.request_id).then((found) => found?.event))
      .then((found) => (found ? deps.audit.decision(found, decision, channel) : undefined))
      .catch((err: unknown) => log.error({ err, worker_id: decision.worker_id }, 'could not record a decision in the audit trail'));
  }

  const open = await deps.requests.allOpenRequests();
  await Promise.all(open.map(async (request) => Promise.all([deps.deadlines.watch(request), deps.escalations.watch(request)])));
  if (open.length > 0) log.info({ open: open.length }, 'keeping the deadlines of open requests');
  return subscription;
}

/** The channel a decision came through, by its source: a person's, the deadline's, the sidecar's rules'. */
function auditChannelOf(source: EventSource): AuditChannel | undefined {
  const parsed = parseSource(source);
  if (parsed.kind === 'person') return parsed.channel;
  if (parsed.kind === 'policy') return 'timeout';
  if (parsed.kind === 'worker_policy') return 'policy';
  // A worker's own decision is refused at the gateway; a component decides nothing.
  return undefined;
}
