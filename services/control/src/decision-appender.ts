import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { requestJson, type NatsConnection } from '@svc/bus';
import {
  CodedError,
  partitionOfWorker,
  subjects,
  type DecisionAppendRequestType,
  type DecisionAppendResultType,
  type SourcedEvent,
  type StoredEvent,
} from '@svc/protocol';
import type { Logger } from '@svc/service-kit';

export interface DecisionAppenderSettings {
  /** How long a decision may wait for its worker's writer (a replica restarting) before the caller is answered 503. */
  waitMs: number;
  /** How long one try waits for an answer before it asks again. */
  tryMs: number;
}

/** Codes after which asking again may succeed: nobody answered, or not in time. */
const TRY_AGAIN = new Set(['unavailable', 'timeout', 'bus_unavailable']);
const FIRST_PAUSE_MS = 50;
const MAX_PAUSE_MS = 1000;

/**
 * Asks the event-ingest replica owning the worker's partition, the one writer of its events, to
 * append a decision (docs/architecture.md, "A decision, from a person to the agent"), and waits for what it did. While the
 * partition has no owner (a replica restarting) the decision waits, asking again, for at most
 * `waitMs`; past that the caller gets 503 with `Retry-After`. A try that went unanswered may
 * still have been stored: every try carries one `attempt_id`, by which the owner answers the
 * next try `stored` (decision-appends.ts), so a decision is never stored twice nor reported as
 * someone else's. An owner that crashed between the commit and its answer forgot the attempt and
 * answers the next try `decided`, with the decision it stored: when that is this very event (its
 * source, time and data) after a try that went unanswered, it was this decision's, so `stored`.
 */
export function createDecisionAppender(nc: NatsConnection, settings: DecisionAppenderSettings, logger: Logger) {
  const log = logger.child({ component: 'decision-appender' });
  return async function appendDecision(workerId: string, decision: SourcedEvent, personTimeoutS?: number): Promise<DecisionAppendResultType> {
    const request: DecisionAppendRequestType = {
      worker_id: workerId,
      decision,
      ...(personTimeoutS === undefined ? {} : { person_timeout_s: personTimeoutS }),
      // The owner must start it well before this try gives up, or leave it.
      start_within_ms: Math.max(1, Math.floor(settings.tryMs / 2)),
      attempt_id: randomUUID(),
    };
    const subject = subjects.decisionAppend(partitionOfWorker(workerId));
    const giveUpAt = Date.now() + settings.waitMs;
    let unanswered = false;
    for (let attempt = 1, pause = FIRST_PAUSE_MS; ; attempt++, pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
      try {
        const result = await requestJson<DecisionAppendResultType>(nc, subject, request, { timeoutMs: settings.tryMs });
        return unanswered && result.outcome === 'decided' && isThisDecision(result.decision, decision) ? { ...result, outcome: 'stored' } : result;
      } catch (err) {
        if (!(err instanceof CodedError && TRY_AGAIN.has(err.code))) throw err;
        unanswered = true;
        if (Date.now() + pause >= giveUpAt) throw unavailable(workerId, settings.waitMs, err);
        log.warn({ worker_id: workerId, attempt, code: err.code }, "the worker's event writer did not take the decision; asking again");
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  };
}

/** The stored decision is the event this caller asked to append (not another try, even the same person's). */
function isThisDecision(stored: StoredEvent<'control_response'> | undefined, asked: SourcedEvent): boolean {
  return stored !== undefined && stored.source === asked.source && stored.ts === asked.ts && isDeepStrictEqual(stored.data, asked.data);
}

export type AppendDecision = ReturnType<typeof createDecisionAppender>;

function unavailable(workerId: string, waitMs: number, cause: CodedError): CodedError {
  return new CodedError(
    'unavailable',
    `the event log of worker ${workerId} took no decision within ${waitMs < 1000 ? `${waitMs} ms` : `${Math.round(waitMs / 1000)} s`} (its event-ingest replica is away); try again`,
    undefined,
    { cause },
  );
}
