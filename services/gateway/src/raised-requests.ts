import type { FastifyBaseLogger } from 'fastify';
import { createIncomingEventPublisher, type NatsConnection } from '@svc/bus';
import {
  componentSource,
  controlWithdrawnData,
  DEFAULT_DECISION_TIMEOUT_S,
  parseSource,
  POLICY_SOURCE,
  type ComponentName,
  type EventData,
  type EventSource,
  type IncomingEvent,
  type StoredEvent,
  type WorkerRecord,
} from '@svc/protocol';
import type { LiveFeeds } from './live-feeds.js';

/**
 * Requests the gateway raises on a worker's behalf (a tunnel, `network`; a push through the git
 * proxy, `git_push`): asked like a tool call, stored in the worker's history with their answer,
 * and decided by the control plane's policy or a person — never by the sandbox, whose word they
 * must not rest on.
 */

/** A decision, and who made it. */
export interface Verdict {
  allow: boolean;
  by: string;
  reason: string;
}

/** What a gateway component writes in a worker's history. */
export interface ComponentRecords {
  readonly component: ComponentName;
  /**
   * Records an event of the component's (or, with `source`, of the policy it applied). A failure
   * is logged, not thrown: a request is decided and answered whether or not its record lands.
   */
  record(workerId: string, event: Omit<IncomingEvent, 'ts'>, source?: EventSource): Promise<void>;
  close(): void;
}

export function createComponentRecords(nc: NatsConnection, component: ComponentName, log: FastifyBaseLogger): ComponentRecords {
  const publisher = createIncomingEventPublisher(nc, componentSource(component));
  return {
    component,
    record(workerId, event, source) {
      return publisher.publish(workerId, { ...event, ts: new Date().toISOString() } as IncomingEvent, source ? { source } : {}).then(
        () => undefined,
        (err: unknown) => log.warn({ err, worker_id: workerId }, `could not record a ${component} event`),
      );
    },
    close: () => publisher.close(),
  };
}

/** How long past the worker's decision deadline a raised request still waits (the control service decides at the deadline). */
const DEADLINE_SLACK_MS = 30_000;

/** The autonomous policy's answer, recorded with the request as for a tool call. */
export async function allowAutonomously(records: ComponentRecords, workerId: string, request: EventData<'control_request'>): Promise<Verdict> {
  return recordPolicyVerdict(records, workerId, request, { allow: true, by: 'policy', reason: 'autonomous: what is not denied is allowed' });
}

/** A verdict the control plane's policy gave at once (a template's rule, autonomy), stored with the request it answers. */
export async function recordPolicyVerdict(
  records: ComponentRecords,
  workerId: string,
  request: EventData<'control_request'>,
  verdict: Verdict,
): Promise<Verdict> {
  const requestId = request.request_id;
  const data: EventData<'control_response'> = {
    request_id: requestId,
    decision: verdict.allow ? 'allow' : 'deny',
    message: verdict.reason,
    decided_by: 'policy',
  };
  await records.record(workerId, { type: 'control_request', uid: `${records.component}:${requestId}:request`, data: request });
  await records.record(workerId, { type: 'control_response', uid: `${records.component}:${requestId}:decision`, data }, POLICY_SOURCE);
  return verdict;
}

/** Stores the request and waits until a person (or the deadline's policy) decides, or the agent gives up (`gone`). */
export async function askPerson(
  deps: { live: LiveFeeds; records: ComponentRecords },
  worker: WorkerRecord,
  request: EventData<'control_request'>,
  gone: AbortSignal,
): Promise<Verdict> {
  const requestId = request.request_id;
  const uid = (part: string) => `${deps.records.component}:${requestId}:${part}`;
  const deadlineMs = (worker.decision_policy?.decision_timeout_s ?? DEFAULT_DECISION_TIMEOUT_S) * 1000 + DEADLINE_SLACK_MS;
  // Watched before the request is stored, so a decision that follows at once is not missed.
  const decided = awaitDecision(deps.live, worker.worker_id, requestId, deadlineMs, gone);
  await deps.records.record(worker.worker_id, { type: 'control_request', uid: uid('request'), data: request });
  const decisionEvent = await decided;
  if (!decisionEvent) {
    // The agent gave up (or nobody decided, not even the deadline's policy): the request goes.
    await deps.records.record(worker.worker_id, { type: 'system', uid: uid('withdrawn'), data: controlWithdrawnData(requestId) });
    return { allow: false, by: 'policy', reason: gone.aborted ? 'the agent closed the connection before a decision' : 'no decision before the deadline' };
  }
  // Who decided is the stored event's source (a person's, or the deadline's policy), not a name in its data.
  const { data, source } = decisionEvent;
  const decider = parseSource(source);
  const by = decider.kind === 'person' ? decider.sub : data.decided_by;
  return { allow: data.decision === 'allow', by, reason: data.message ?? `${data.decision === 'allow' ? 'allowed' : 'denied'} by ${by}` };
}

/** Waits for the decision on `requestId` (announced as the worker's events are stored). */
function awaitDecision(
  live: LiveFeeds,
  workerId: string,
  requestId: string,
  timeoutMs: number,
  gone: AbortSignal,
): Promise<StoredEvent<'control_response'> | undefined> {
  return new Promise((resolve) => {
    const finish = (value: StoredEvent<'control_response'> | undefined) => {
      stop();
      clearTimeout(timer);
      gone.removeEventListener('abort', onGone);
      resolve(value);
    };
    const stop = live.watch(workerId, (event) => {
      // A person's decision or the deadline's: a worker's own "policy" answer to a raised request is no decision.
      if (event.type !== 'control_response' || (event.data as EventData<'control_response'>).request_id !== requestId) return;
      const decider = parseSource(event.source).kind;
      if (decider === 'person' || decider === 'policy') finish(event as StoredEvent<'control_response'>);
    });
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const onGone = () => finish(undefined);
    if (gone.aborted) return onGone();
    gone.addEventListener('abort', onGone);
  });
}
