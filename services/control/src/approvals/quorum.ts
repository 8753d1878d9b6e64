import type { UserAssertion } from '@svc/auth';
import { CodedError, type ApprovalVoteAnswer, type DecideRequestType } from '@svc/protocol';
import type { StoredRequest } from '@svc/store';
import type { ApprovalFacts } from './approval-facts.js';
import type { ApprovalStore } from './approval-store.js';

/** A request as the control request log finds it: open, decided or withdrawn. */
type FoundRequest = StoredRequest & { withdrawn: boolean; decision: unknown };

/**
 * A person's allow on a request whose route asks `quorum` different people (docs/teams.md): kept
 * as their vote (once per person: the same person again changes no count, and their retry is
 * answered as their first), told to the history and the audit trail, and answered with the count
 * — unless it completes the quorum: then it resolves with the voters, and the caller stores the
 * decision, which the agent hears (the first to be stored wins, as for any decision: two
 * replicas completing it at once store one). A request already decided or withdrawn is left to
 * the caller, whose store answers why; one past its deadline is `expired`.
 */
export async function takeVote(
  deps: { approvals: Pick<ApprovalStore, 'vote'>; facts: Pick<ApprovalFacts, 'voted'> },
  person: UserAssertion,
  request: FoundRequest,
  body: DecideRequestType['decision'],
  quorum: number,
  deadline: number,
): Promise<ApprovalVoteAnswer | { voters: string[] } | 'expired' | undefined> {
  const { worker_id: workerId, data } = request.event;
  if (body.scope === 'always')
    throw new CodedError('invalid_request', `/body/scope: request ${data.request_id} needs ${quorum} people to allow it; one vote cannot make a rule "always"`);
  if (request.decision || request.withdrawn) return undefined;
  // Past the deadline by this service's clock: the deadline decides, never one allow of a quorum.
  if (Date.now() >= deadline) return 'expired';
  const vote = { voter: person.sub, decision: 'allow' as const, channel: person.channel, at: new Date().toISOString() };
  const { votes } = await deps.approvals.vote(workerId, data.request_id, vote);
  const allows = votes.filter((kept) => kept.decision === 'allow');
  const mine = allows.find((kept) => kept.voter === person.sub) ?? vote;
  await deps.facts.voted(request.event, mine, { allows: allows.length, quorum });
  const voters = allows.map((kept) => kept.voter);
  if (allows.length >= quorum) return { voters };
  return { vote: { request_id: data.request_id, voter: mine.voter, decision: 'allow', at: mine.at }, allows: allows.length, quorum, voters };
}
