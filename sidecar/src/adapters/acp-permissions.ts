import type { PermissionOption, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import { controlWithdrawnData, type EventData } from '@svc/protocol';
import type { AgentEvent } from './adapter.js';
import { acpToolInput, acpToolName, type AcpToolCalls } from './acp-updates.js';

/** A permission request waiting for svc's decision: the options the agent offered, and its answer. */
interface PendingPermission {
  options: readonly PermissionOption[];
  toolCallId: string;
  /** The file the call will write, if it names one (its `fs/write_text_file` is then not asked again). */
  file: string | undefined;
  /** The command an `execute` call runs (its `terminal/create` is then not asked again). */
  command: string | undefined;
  answer(outcome: RequestPermissionOutcome): void;
}

/**
 * The option of the agent's that a decision means: allow → its "allow once" (svc keeps an
 * "always" as its own rule, so the agent keeps asking and the permission engine keeps answering:
 * svc stays the one that decides), deny → "reject once"; the closest kind it offers otherwise,
 * and a cancellation when it offers none.
 */
function optionFor(decision: EventData<'control_response'>, options: readonly PermissionOption[]): RequestPermissionOutcome {
  const preferred = decision.decision === 'allow' ? (['allow_once', 'allow_always'] as const) : (['reject_once', 'reject_always'] as const);
  for (const kind of preferred) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option) return { outcome: 'selected', optionId: option.optionId };
  }
  return { outcome: 'cancelled' };
}

/**
 * `session/request_permission` as svc asks it: a `control_request` (after the call's `tool_use`,
 * which an agent may name first here), answered with the option svc's decision means. A refused
 * call gets its `tool_result` at once (Gemini CLI reports nothing more of a call it was refused).
 */
export function createAcpPermissions(options: { emit(event: AgentEvent): void; calls: AcpToolCalls; runTag: string }) {
  const { emit, calls } = options;
  const pending = new Map<string, PendingPermission>();
  /** Files that calls allowed in this turn write, and commands they run. */
  const allowedWrites = new Set<string>();
  const allowedCommands = new Set<string>();

  return {
    ask(params: RequestPermissionRequest, rpcId: unknown): Promise<RequestPermissionResponse> {
      const call = calls.remember(params.toolCall);
      calls.use(call).forEach(emit);
      const requestId = `acp-${options.runTag}-${String(rpcId)}`;
      const input = acpToolInput(call);
      const file = typeof input['file_path'] === 'string' ? input['file_path'] : undefined;
      const command = call.kind === 'execute' && typeof input['command'] === 'string' ? input['command'] : undefined;
      return new Promise((resolve) => {
        pending.set(requestId, { options: params.options, toolCallId: call.toolCallId, file, command, answer: (outcome) => resolve({ outcome }) });
        emit({
          type: 'control_request',
          data: {
            request_id: requestId,
            tool_name: acpToolName(call),
            input,
            tool_use_id: call.toolCallId,
            ...(call.title ? { description: call.title } : {}),
          },
        });
      });
    },

    /** Answers the request a decision is for; false when none of this run's waits for it. */
    decide(decision: EventData<'control_response'>, request: EventData<'control_request'>): boolean {
      const waiting = pending.get(request.request_id);
      if (!waiting) return false;
      pending.delete(request.request_id);
      if (decision.decision === 'allow' && waiting.file !== undefined) allowedWrites.add(waiting.file);
      if (decision.decision === 'allow' && waiting.command !== undefined) allowedCommands.add(waiting.command);
      if (decision.decision === 'deny') {
        const why = `refused by ${decision.decided_by}${decision.message ? `: ${decision.message}` : ''}`;
        calls.end({ toolCallId: waiting.toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: why } }] }).forEach(emit);
      }
      waiting.answer(optionFor(decision, waiting.options));
      return true;
    },

    /** A cancelled turn's requests: answered "cancelled" (as the protocol asks) and withdrawn. */
    cancelAll(): void {
      for (const [requestId, waiting] of pending) {
        waiting.answer({ outcome: 'cancelled' });
        emit({ type: 'system', data: { ...controlWithdrawnData(requestId), message: `request ${requestId} withdrawn: the turn was cancelled` } });
      }
      pending.clear();
    },

    allowedWrite: (file: string): boolean => allowedWrites.has(file),
    allowedCommand: (command: string): boolean => allowedCommands.has(command),
    turnEnded: (): void => {
      allowedWrites.clear();
      allowedCommands.clear();
    },
  };
}
