import { isDeepStrictEqual } from 'node:util';
import type { PermissionOption, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse } from '@agentclientprotocol/sdk';
import { controlWithdrawnData, type EventData } from '@svc/protocol';
import type { AgentEvent } from './adapter.js';
import { acpToolInput, acpToolName, boundedId, boundedInput, INPUT_STRING_CHARS, RULE_FIELDS, type AcpToolCalls } from './acp-updates.js';

/** A permission request waiting for svc's decision: the options the agent offered, and its answer. */
interface PendingPermission {
  options: readonly PermissionOption[];
  /** The input as asked (a person's changed input cannot be given to an ACP agent). */
  input: Record<string, unknown>;
  toolCallId: string;
  /** The file the call will write, if it names one (its `fs/write_text_file` is then not asked again). */
  file: string | undefined;
  /** The command an `execute` call runs (its `terminal/create` is then not asked again). */
  command: string | undefined;
  answer(outcome: RequestPermissionOutcome): void;
}

/**
 * The option of the agent's that a decision means: allow → its "allow once" (never "always":
 * svc keeps an "always" as its own rule, so the agent keeps asking and the permission engine
 * keeps answering — svc stays the one that decides; Claude's ACP build would switch its whole
 * session to accepting edits), deny → "reject once" (or "reject always"); a cancellation when
 * it offers neither.
 */
function optionFor(decision: EventData<'control_response'>, options: readonly PermissionOption[]): RequestPermissionOutcome {
  const preferred = decision.decision === 'allow' ? (['allow_once'] as const) : (['reject_once', 'reject_always'] as const);
  for (const kind of preferred) {
    const option = options.find((candidate) => candidate.kind === kind);
    if (option) return { outcome: 'selected', optionId: option.optionId };
  }
  return { outcome: 'cancelled' };
}

/** Refused at once, not asked: what rules match (a command, files) is never cut, and this call's is too large to be decided. */
function tooLarge(input: Record<string, unknown>): string | undefined {
  const ruleFields = JSON.stringify(RULE_FIELDS.map((field) => input[field]));
  return ruleFields.length > INPUT_STRING_CHARS
    ? `svc refused it: its command or files (${ruleFields.length} characters) are too large to be decided`
    : undefined;
}

/** An allowance of another input than was asked is a refusal: an ACP agent takes no changed input. */
function asGiven(decision: EventData<'control_response'>, asked: Record<string, unknown>): EventData<'control_response'> {
  if (decision.decision !== 'allow' || decision.updated_input === undefined || isDeepStrictEqual(decision.updated_input, asked)) return decision;
  return { ...decision, decision: 'deny', message: 'svc cannot give an ACP agent a changed input: allow it as asked, or deny it' };
}

/**
 * `session/request_permission` as svc asks it: a `control_request` (after the call's `tool_use`,
 * which an agent may name first here), answered with the option svc's decision means. A refused
 * call gets its `tool_result` at once (Gemini CLI reports nothing more of a refused call). Request
 * ids are svc's own (the agent's JSON-RPC ids are its to choose, and to repeat).
 */
export function createAcpPermissions(options: { emit(event: AgentEvent): void; calls: AcpToolCalls; runTag: string }) {
  const { emit, calls } = options;
  const pending = new Map<string, PendingPermission>();
  let asked = 0;
  /** Files that calls allowed in this turn write (each write to them unasked), and commands they run (each once in a terminal). */
  const allowedWrites = new Set<string>();
  const allowedCommands = new Set<string>();
  const fail = (toolCallId: string, why: string) =>
    calls.end({ toolCallId, status: 'failed', content: [{ type: 'content', content: { type: 'text', text: why } }] }).forEach(emit);

  return {
    ask(params: RequestPermissionRequest): Promise<RequestPermissionResponse> {
      const call = calls.remember(params.toolCall);
      calls.use(call).forEach(emit);
      const requestId = `acp-${options.runTag}-${++asked}`;
      const input = acpToolInput(call);
      const toolName = acpToolName(call);
      const refused = tooLarge(input);
      if (refused) {
        fail(call.toolCallId, refused);
        return Promise.resolve({ outcome: optionFor({ request_id: requestId, decision: 'deny', decided_by: 'policy' }, params.options) });
      }
      // Only a call that changes its file lets the agent's own write to it through unasked.
      const changes = call.kind === 'edit' || call.kind === 'delete' || call.kind === 'move';
      const file = changes && typeof input['file_path'] === 'string' ? input['file_path'] : undefined;
      const command = toolName === 'execute' && typeof input['command'] === 'string' ? input['command'] : undefined;
      const shown = boundedInput(input);
      return new Promise((resolve) => {
        pending.set(requestId, {
          options: params.options,
          input: shown,
          toolCallId: call.toolCallId,
          file,
          command,
          answer: (outcome) => resolve({ outcome }),
        });
        const description = call.title ? { description: call.title.slice(0, 4096) } : {};
        emit({
          type: 'control_request',
          data: { request_id: requestId, tool_name: toolName, input: shown, tool_use_id: boundedId(call.toolCallId), ...description },
        });
      });
    },

    /** Answers the request a decision is for; false when none of this run's waits for it. */
    decide(given: EventData<'control_response'>, request: EventData<'control_request'>): boolean {
      const waiting = pending.get(request.request_id);
      if (!waiting) return false;
      pending.delete(request.request_id);
      const decision = asGiven(given, waiting.input);
      if (decision.decision === 'allow' && waiting.file !== undefined) allowedWrites.add(waiting.file);
      if (decision.decision === 'allow' && waiting.command !== undefined) allowedCommands.add(waiting.command);
      if (decision.decision === 'deny') fail(waiting.toolCallId, `refused by ${decision.decided_by}${decision.message ? `: ${decision.message}` : ''}`);
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
    /** A command allowed for a terminal runs once on that allowance. */
    takeAllowedCommand: (command: string): boolean => allowedCommands.delete(command),
    turnEnded: (): void => {
      allowedWrites.clear();
      allowedCommands.clear();
    },
  };
}
