import { sql, type Database, type Kysely } from '@svc/store';

/** One person's vote on a request whose route asks a quorum. */
export interface ApprovalVote {
  voter: string;
  decision: 'allow' | 'deny';
  channel: string;
  at: string;
}

/**
 * The votes and escalations of routed requests (docs/teams.md), in the control service's tables:
 * each kept once by its primary key, whichever replica writes it first.
 */
export function createApprovalStore(db: Kysely<Database>) {
  return {
    /** Records `vote` (once per person: a second one of theirs changes nothing); resolves with whether it was new and every vote so far, oldest first. */
    async vote(workerId: string, requestId: string, vote: ApprovalVote): Promise<{ recorded: boolean; votes: ApprovalVote[] }> {
      const inserted = await db
        .insertInto('approval_votes')
        .values({ worker_id: workerId, request_id: requestId, voter: vote.voter, decision: vote.decision, channel: vote.channel, at: new Date(vote.at) })
        .onConflict((conflict) => conflict.doNothing())
        .returning('voter')
        .executeTakeFirst();
      return { recorded: inserted !== undefined, votes: await this.votesOf(workerId, requestId) };
    },

    async votesOf(workerId: string, requestId: string): Promise<ApprovalVote[]> {
      const rows = await db
        .selectFrom('approval_votes')
        .select(['voter', 'decision', 'channel', 'at'])
        .where('worker_id', '=', workerId)
        .where('request_id', '=', requestId)
        .orderBy('at')
        .orderBy('voter')
        .execute();
      return rows.map((row) => ({ voter: row.voter, decision: row.decision as ApprovalVote['decision'], channel: row.channel, at: row.at.toISOString() }));
    },

    /** Records that the request was offered to `to`; true for the one call that recorded it. */
    async escalate(workerId: string, requestId: string, to: readonly string[], at: Date): Promise<boolean> {
      const inserted = await db
        .insertInto('approval_escalations')
        .values({ worker_id: workerId, request_id: requestId, escalated_to: JSON.stringify(to), at })
        .onConflict((conflict) => conflict.doNothing())
        .returning('request_id')
        .executeTakeFirst();
      return inserted !== undefined;
    },

    /** Whether the request was offered to its route's `escalate_to`. */
    async escalated(workerId: string, requestId: string): Promise<boolean> {
      const row = await db
        .selectFrom('approval_escalations')
        .select(sql<number>`1`.as('one'))
        .where('worker_id', '=', workerId)
        .where('request_id', '=', requestId)
        .executeTakeFirst();
      return row !== undefined;
    },
  };
}

export type ApprovalStore = ReturnType<typeof createApprovalStore>;
