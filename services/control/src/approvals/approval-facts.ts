import type { IncomingEventPublisher } from '@svc/bus';
import { actionHash, SYSTEM_SUBTYPES, type ApprovalRoute, type AuditChannel, type StoredEvent } from '@svc/protocol';
import type { AuditRecorder } from '../audit.js';
import type { Notifier } from '../webhooks/notifications.js';
import type { ApprovalVote } from './approval-store.js';

/**
 * What the people watching a routed request are told of it, besides its decision: each vote
 * toward a quorum and the escalation, in the worker's history (a `system` event from
 * `svc:approvals`), the audit trail and, for an escalation, the webhooks of the people it now
 * goes to. Every fact has a stable id: reported twice (two replicas), it is kept once.
 */
export function createApprovalFacts(deps: { publisher: IncomingEventPublisher; audit: AuditRecorder; notifier: Notifier }) {
  return {
    async voted(request: StoredEvent<'control_request'>, vote: ApprovalVote, tally: { allows: number; quorum: number }): Promise<void> {
      const { request_id: requestId, tool_name: toolName, input } = request.data;
      await deps.publisher.publish(request.worker_id, {
        type: 'system',
        uid: `approval-vote:${requestId}:${vote.voter}`,
        ts: vote.at,
        data: {
          level: 'info',
          subtype: SYSTEM_SUBTYPES.approvalVote,
          message: `${vote.voter} voted to ${vote.decision} ${toolName} (${tally.allows} of ${tally.quorum} needed)`,
          details: { request_id: requestId, voter: vote.voter, decision: vote.decision, allows: tally.allows, quorum: tally.quorum },
        },
      });
      await deps.audit.append({
        id: `vote:${request.worker_id}:${requestId}:${vote.voter}`,
        at: vote.at,
        actor: vote.voter,
        channel: vote.channel as AuditChannel,
        action: 'vote',
        worker_id: request.worker_id,
        request_id: requestId,
        decision: vote.decision,
        action_hash: await actionHash(toolName, input),
        details: { tool_name: toolName, allows: tally.allows, quorum: tally.quorum },
      });
    },

    async escalated(request: StoredEvent<'control_request'>, route: ApprovalRoute, at: Date, deadline: Date): Promise<void> {
      const { request_id: requestId, tool_name: toolName, input } = request.data;
      const to = route.escalate_to ?? [];
      await deps.publisher.publish(request.worker_id, {
        type: 'system',
        uid: `request-escalated:${requestId}`,
        ts: at.toISOString(),
        data: {
          level: 'warn',
          subtype: SYSTEM_SUBTYPES.requestEscalated,
          message: `nobody in ${route.to.join(', ')} decided ${toolName} within ${route.escalate_after_s} s: offered to ${to.join(', ')} too`,
          details: { request_id: requestId, to, rule: route.match, deadline: deadline.toISOString() },
        },
      });
      await deps.audit.append({
        id: `escalated:${request.worker_id}:${requestId}`,
        at: at.toISOString(),
        actor: 'policy',
        channel: 'policy',
        action: 'escalated',
        worker_id: request.worker_id,
        request_id: requestId,
        action_hash: await actionHash(toolName, input),
        details: { tool_name: toolName, to, rule: route.match },
      });
      await deps.notifier.escalated(request, route, deadline);
    },
  };
}

export type ApprovalFacts = ReturnType<typeof createApprovalFacts>;
