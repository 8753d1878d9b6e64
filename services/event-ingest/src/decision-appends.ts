import type { Subscription } from '@nats-io/transport-node';
import { serveRpc, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  createChecker,
  DecisionAppendRequest,
  EventSourceSchema,
  partitionOfWorker,
  subjects,
  validateIncomingEvent,
  type DecisionAppendRequestType,
  type DecisionAppendResultType,
  type EventSource,
  type SourcedEvent,
  type StoredEvent,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import { isStoreUnavailable, type EventStore } from '@svc/store';
import type { Announcer } from './announcer.js';
import type { PartitionConsumer, TurnResult } from './ingest.js';

export interface DecisionAppendsDeps {
  nc: NatsConnection;
  /** This replica's partitions, each with its consumer: a decision takes its turn there. */
  partitions: ReadonlyMap<number, PartitionConsumer>;
  store: Pick<EventStore, 'append' | 'decide'>;
  announcer: Announcer;
  logger: Logger;
}

const isEventSource = createChecker<string>(EventSourceSchema);

/** Decisions whose storing try is remembered, per replica: far more than are decided while a try waits. */
const REMEMBERED_ATTEMPTS = 10_000;

/**
 * Appends the decisions the control service asks for (`svc.events.decide.<partition>`), as the
 * worker's one writer: each takes its turn in the partition between two batches of incoming
 * events, is stored (a person's checked against its request by `svc_decide`, the deadline's
 * under the request's one decision uid), and announced in the worker's id order. The answer
 * leaves as soon as the decision is stored; its announcement follows before the partition's next
 * batch. Only the control service may publish here (`libs/bus/src/nats-auth.ts`); what it sends
 * is still checked, as any event is.
 */
export function serveDecisionAppends(deps: DecisionAppendsDeps): Subscription[] {
  const log = deps.logger.child({ component: 'decision-appends' });
  /** Which try stored each decision this replica stored (worker and uid → attempt id), the newest kept. */
  const storedBy = new Map<string, string>();

  return [...deps.partitions].map(([partition, consumer]) =>
    serveRpc<DecisionAppendRequestType, DecisionAppendResultType>(
      deps.nc,
      subjects.decisionAppend(partition),
      (request) => {
        if (partitionOfWorker(request.worker_id) !== partition)
          throw new CodedError('invalid_request', `worker ${request.worker_id} is not of partition ${partition}`);
        const decision = checkedDecision(request.decision);
        const arrived = Date.now();
        return consumer.inTurn(async () => {
          // The caller gave up on this try by now and asks again: storing it here too would answer nobody.
          if (Date.now() - arrived > request.start_within_ms)
            throw new CodedError('unavailable', `the decision waited over ${request.start_within_ms} ms for its turn; try again`);
          try {
            return await append(request, decision);
          } catch (err) {
            if (isStoreUnavailable(err)) throw new CodedError('store_unavailable', 'the event store is unavailable; the decision was not stored');
            throw err;
          }
        });
      },
      { logger: log, queue: 'event-ingest', checker: createChecker(DecisionAppendRequest) },
    ),
  );

  async function append(request: DecisionAppendRequestType, decision: SourcedEvent): Promise<TurnResult<DecisionAppendResultType>> {
    const workerId = request.worker_id;
    const key = `${workerId}\n${decision.uid}`;
    const result = await appendOnce(request, decision);
    if (result.outcome === 'stored') {
      storedBy.set(key, request.attempt_id);
      if (storedBy.size > REMEMBERED_ATTEMPTS) storedBy.delete(storedBy.keys().next().value!);
    }
    // An earlier try of this very decision was stored (its answer was lost): this try's answer is that.
    const answer: DecisionAppendResultType =
      result.outcome === 'decided' && storedBy.get(key) === request.attempt_id ? { ...result, outcome: 'stored' } : result;
    log.debug({ worker_id: workerId, uid: decision.uid, outcome: answer.outcome }, 'decision appended');
    // Announced once stored, and again when found: a replica that stopped between the commit and
    // the announcement left it unannounced (the announcer skips what it announced; followers too).
    const found = result.decision;
    return found ? { answer, afterwards: () => deps.announcer.announce(workerId, [found]) } : { answer };
  }

  async function appendOnce(request: DecisionAppendRequestType, decision: SourcedEvent): Promise<DecisionAppendResultType> {
    const workerId = request.worker_id;
    if (request.person_timeout_s === undefined) {
      const [appended] = await deps.store.append(workerId, [decision]);
      return { outcome: appended!.duplicate ? 'decided' : 'stored', decision: appended!.event as StoredEvent<'control_response'> };
    }
    const requestId = (decision.data as { request_id: string }).request_id;
    const outcome = await deps.store.decide(workerId, requestId, request.person_timeout_s, decision);
    if (outcome.kind === 'not_found') return { outcome: 'not_found' };
    const found = { request: outcome.request.event, request_stored_at: outcome.request.storedAt.toISOString() };
    if (!('decision' in outcome)) return { outcome: outcome.kind, ...found };
    return { outcome: outcome.kind, ...found, decision: outcome.decision };
  }
}

/** The decision as an event to append: a `control_response` that passes the protocol, with a source. */
function checkedDecision(value: unknown): SourcedEvent {
  const { source, ...event } = typeof value === 'object' && value !== null ? (value as { source?: unknown }) : { source: undefined };
  const checked = validateIncomingEvent(event, '/decision');
  if (!checked.ok || checked.value.type !== 'control_response' || typeof source !== 'string' || !isEventSource.check(source).ok)
    throw new CodedError('invalid_request', '/decision must be a control_response event with its source');
  return { ...checked.value, source: source as EventSource };
}
