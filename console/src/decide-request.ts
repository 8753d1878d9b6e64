import { apiPaths, isVoteAnswer, type DecideAnswer, type PostControlBodyType } from '@svc/protocol';
import { ApiError, type Api } from './api.js';

/** How one person's decision on one request ended: what its card says, whether made on the card or in a bulk decision. */
export type DecisionResult =
  /** Stored: the agent gets it. */
  | { kind: 'decided'; decision: 'allow' | 'deny' }
  /** An allow counted toward a quorum (`202`): the request stays open until enough people allow it. */
  | { kind: 'vote'; allows: number; quorum: number; voters: string[] }
  /** Closed first: decided by someone else, or withdrawn (`already_decided`, `request_closed`). */
  | { kind: 'closed'; message: string }
  /** Not this person's to decide (`403 not_a_decider`: routed to others; `role_required`): trying again changes nothing. */
  | { kind: 'refused'; message: string }
  /** Failed for another reason (the gateway away, say): worth trying again. */
  | { kind: 'failed'; message: string };

/** Posts one decision (`POST /v1/workers/{id}/control`) and says how it ended; never throws. */
export async function decideRequest(api: Api, workerId: string, body: PostControlBodyType): Promise<DecisionResult> {
  try {
    const answer = await api.request<DecideAnswer>('POST', apiPaths.control(workerId), body);
    if (isVoteAnswer(answer)) return { kind: 'vote', allows: answer.allows, quorum: answer.quorum, voters: answer.voters };
    return { kind: 'decided', decision: body.decision };
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'already_decided' || err.code === 'request_closed')) return { kind: 'closed', message: err.message };
    if (err instanceof ApiError && err.status === 403) return { kind: 'refused', message: err.message };
    return { kind: 'failed', message: err instanceof Error ? err.message : String(err) };
  }
}

/** What a result says to the person, in a sentence. */
export function decisionResultText(result: DecisionResult): string {
  switch (result.kind) {
    case 'decided':
      return result.decision === 'allow' ? 'Allowed' : 'Denied';
    case 'vote':
      return `Your vote is counted: ${result.allows} of ${result.quorum}. The request stays open until ${result.quorum} people allow it.`;
    case 'closed':
      return result.message;
    case 'refused':
      return `Not yours to decide: ${result.message}`;
    case 'failed':
      return `Not decided: ${result.message}`;
  }
}

/** Whether the request may still be decided after this result: a failure may be tried again, a vote leaves it open. */
export function stillDecidable(result: DecisionResult | undefined): boolean {
  return result === undefined || result.kind === 'failed' || result.kind === 'vote';
}
