import type { DurablePublisher } from '@svc/bus';
import {
  CodedError,
  controlResponseUid,
  DEFAULT_DENY_MESSAGE,
  storedBatchMessageId,
  subjects,
  type DecideRequestType,
  type DecisionPolicy,
  type EventData,
  type IncomingEvent,
  type StoredEvent,
  type StoredEventBatchType,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';
import { createEventStore, type Database, type Kysely } from '@svc/store';
import { createControlQueries, type ControlQueries, type StoredRequest } from './control-queries.js';

const ANNOUNCE_ATTEMPTS = 5;
const ANNOUNCE_RETRY_MS = 500;

/** Who decides when nobody did in time. */
export const TIMEOUT_DECIDER = 'policy:timeout';

export interface DecisionsDeps {
  db: Kysely<Database>;
  queries: ControlQueries;
  announcer: DurablePublisher;
  /** The worker's decision deadline (from its template). */
  policyOf(workerId: string): Promise<DecisionPolicy>;
  logger: Logger;
}

export function deadlineOf(request: StoredRequest, policy: DecisionPolicy): number {
  return request.storedAt.getTime() + policy.decision_timeout_s * 1000;
}

/** The 409 for a request that already has a decision: the deadline's is "closed", a person's "already decided". */
function refusal(existing: StoredEvent<'control_response'>): CodedError {
  const data = existing.data;
  if (data.decided_by === TIMEOUT_DECIDER) {
    return new CodedError('request_closed', `request ${data.request_id} expired at ${existing.ts}; the policy decided ${data.decision}`, { reason: 'expired', decision: data.decision, decided_at: existing.ts });
  }
  const who = data.decided_by_name ? `${data.decided_by_name} (${data.decided_by})` : data.decided_by;
  return new CodedError('already_decided', `request ${data.request_id} was already decided (${data.decision}) by ${who} at ${existing.ts}`, {
    decided_by: data.decided_by,
    decided_at: existing.ts,
    decision: data.decision,
  });
}

/**
 * Stores decisions. The first decision on a request wins across every control replica because
 * every decision on it is appended under one uid (`controlResponseUid`) and the store keeps one
 * event per (worker, uid), under the worker's row lock: a second append finds the first and is
 * answered 409. Nothing here relies on memory.
 */
export function createDecisions(deps: DecisionsDeps) {
  const log = deps.logger.child({ component: 'decisions' });

  /** Appends one decision (and its "always" rule, in the same transaction); `duplicate` when the request already had one. */
  async function store(workerId: string, data: EventData<'control_response'>): Promise<{ event: StoredEvent<'control_response'>; duplicate: boolean }> {
    const event: IncomingEvent = { type: 'control_response', uid: controlResponseUid(data.request_id), ts: new Date().toISOString(), data };
    const append = async (db: Kysely<Database>) => (await createEventStore(db).appendMany([{ workerId, events: [event] }]))[0]![0]!;
    // A plain decision is one statement (one round trip); one that adds a rule stores both in
    // one transaction.
    const result =
      data.scope !== 'always'
        ? await append(deps.db)
        : await deps.db.transaction().execute(async (trx) => {
            const appended = await append(trx);
            if (!appended.duplicate) {
              // Read inside the transaction: embedded PGlite has one connection, which it holds.
              const request = await createControlQueries(trx).findRequest(workerId, data.request_id);
              await trx
                .insertInto('permission_rules')
                .values({
                  worker_id: workerId,
                  tool_name: request!.event.data.tool_name,
                  input_pattern: data.input_pattern ?? null,
                  decision: data.decision,
                  added_by: data.decided_by,
                  request_id: data.request_id,
                })
                .execute();
            }
            return appended;
          });
    const stored = result.event as StoredEvent<'control_response'>;
    if (!result.duplicate) announce(workerId, stored);
    return { event: stored, duplicate: result.duplicate };
  }

  /**
   * Viewers and long polls hear of a decision like any stored event. The decider's answer does
   * not wait for JetStream's ack (the decision is stored; the ack is another hop, ~2 ms of a
   * decision's round trip): a failed announcement is tried again, and a long poll that never
   * hears of it still finds the decision in the store at its deadline.
   */
  function announce(workerId: string, event: StoredEvent<'control_response'>, attempt = 1): void {
    const announcement: StoredEventBatchType = { worker_id: workerId, events: [event] };
    deps.announcer.publish(subjects.storedEvent(workerId), announcement, { messageId: storedBatchMessageId(announcement) }).catch((err: unknown) => {
      if (attempt >= ANNOUNCE_ATTEMPTS) return log.error({ err, workerId, eventId: event.id }, 'a decision could not be announced; pollers will read it from the store');
      log.warn({ err, workerId, eventId: event.id, attempt }, 'announcing a decision failed; trying again');
      setTimeout(() => announce(workerId, event, attempt + 1), ANNOUNCE_RETRY_MS * attempt).unref();
    });
  }

  /** At (or after) the deadline: the policy decides, unless someone did first. */
  async function expire(request: StoredRequest, policy: DecisionPolicy): Promise<StoredEvent<'control_response'>> {
    const { request_id: requestId, tool_name: toolName } = request.event.data;
    // The sidecar's policy may have decided it (a decision under another uid): nothing to expire.
    const current = await deps.queries.findRequest(request.event.worker_id, requestId);
    if (current?.decision) return current.decision;
    const data: EventData<'control_response'> = {
      request_id: requestId,
      decision: policy.on_timeout,
      message:
        policy.on_timeout === 'deny'
          ? `Nobody decided on ${toolName} within ${policy.decision_timeout_s} s, so it was denied.`
          : `Nobody decided on ${toolName} within ${policy.decision_timeout_s} s; the worker's policy allows it.`,
      decided_by: TIMEOUT_DECIDER,
    };
    const { event, duplicate } = await store(request.event.worker_id, data);
    if (!duplicate) log.info({ workerId: request.event.worker_id, requestId, decision: policy.on_timeout }, 'deadline passed; the policy decided');
    return event;
  }

  return {
    expire,

    /** A person's decision: checks, in order, that the request exists, is not withdrawn, has not expired and is undecided. */
    async decide({ worker_id: workerId, decision: body, decided_by: decidedBy }: DecideRequestType): Promise<StoredEvent<'control_response'>> {
      const [request, policy] = await Promise.all([deps.queries.findRequest(workerId, body.request_id), deps.policyOf(workerId)]);
      if (!request) throw new CodedError('request_not_found', `worker ${workerId} has no control request ${body.request_id}`);
      if (request.withdrawn) throw new CodedError('request_closed', `request ${body.request_id} was withdrawn by the agent`, { reason: 'withdrawn' });
      // Decided already: by the sidecar's permission engine (an event it posted), or by a person
      // or the deadline (the uid rule below would refuse those too; this names them sooner).
      if (request.decision) throw refusal(request.decision);
      if (Date.now() >= deadlineOf(request, policy)) throw refusal(await expire(request, policy));

      const data: EventData<'control_response'> = {
        request_id: body.request_id,
        decision: body.decision,
        ...(body.decision === 'deny' ? { message: body.message?.trim() ? body.message : DEFAULT_DENY_MESSAGE } : body.message === undefined ? {} : { message: body.message }),
        ...(body.updated_input === undefined ? {} : { updated_input: body.updated_input }),
        ...(body.scope === undefined ? {} : { scope: body.scope }),
        ...(body.input_pattern === undefined ? {} : { input_pattern: body.input_pattern }),
        decided_by: decidedBy.sub,
        ...(decidedBy.name === undefined ? {} : { decided_by_name: decidedBy.name }),
        ...(decidedBy.email === undefined ? {} : { decided_by_email: decidedBy.email }),
      };
      const { event, duplicate } = await store(workerId, data);
      if (duplicate) throw refusal(event);
      log.info({ workerId, requestId: body.request_id, decision: body.decision, decidedBy: decidedBy.sub }, 'decided');
      return event;
    },
  };
}

export type Decisions = ReturnType<typeof createDecisions>;
