import type { EventData } from '@svc/protocol';
import { pathsOfPatch, readRolloutCalls, type RolloutCall } from './codex-rollout.js';
import { modelCommandOf } from './shell-command.js';
import { isObject, text, type AgentEvent, type Json } from './adapter.js';

/** A Codex item as svc's tool, or undefined for an item that is no tool call (a message, reasoning). */
export function toolOf(item: Json): { name: string; input: Json } | undefined {
  switch (item['type']) {
    case 'commandExecution':
      return {
        name: 'command_execution',
        input: { command: modelCommandOf(text(item['command']) ?? ''), ...(text(item['cwd']) ? { cwd: text(item['cwd']) } : {}) },
      };
    case 'fileChange':
      return { name: 'file_change', input: { changes: Array.isArray(item['changes']) ? item['changes'] : [] } };
    case 'mcpToolCall':
      return {
        name: `mcp__${text(item['server']) ?? 'unknown'}__${text(item['tool']) ?? 'unknown'}`,
        input: isObject(item['arguments']) ? item['arguments'] : {},
      };
    default:
      return undefined;
  }
}

/** A call from Codex's rollout as svc's tool: `exec_command` is `command_execution`, `apply_patch` `file_change`. */
function toolOfCall(call: RolloutCall): { name: string; input: Json } {
  if (call.name === 'apply_patch') return { name: 'file_change', input: { changes: pathsOfPatch(call.input).map((path) => ({ path })) } };
  let args: unknown;
  try {
    args = JSON.parse(call.input);
  } catch {
    args = undefined;
  }
  if (call.name === 'exec_command' && isObject(args))
    return { name: 'command_execution', input: { command: text(args['cmd']) ?? '', ...(text(args['workdir']) ? { cwd: text(args['workdir']) } : {}) } };
  return { name: call.name, input: isObject(args) ? args : { input: call.input } };
}

/** Whether the output Codex gave the model reports success: an exit code of 0 (a call Codex made no item for rarely succeeded). */
function callFailed(output: string | undefined): boolean {
  const code = output === undefined ? undefined : /(?:Process exited with code|Exit code:) (-?\d+)/.exec(output);
  return code ? code[1] !== '0' : true;
}

function toolResultOf(item: Json): EventData<'tool_result'> {
  const id = text(item['id']) ?? 'unknown';
  const status = text(item['status']);
  const failed = status === 'failed' || status === 'declined';
  if (item['type'] === 'commandExecution') {
    const exitCode = item['exitCode'];
    return {
      tool_use_id: id,
      content: text(item['aggregatedOutput']) ?? (status === 'declined' ? 'declined' : ''),
      is_error: failed || (typeof exitCode === 'number' && exitCode !== 0),
    };
  }
  return { tool_use_id: id, content: JSON.stringify(item['result'] ?? item['changes'] ?? status ?? ''), is_error: failed };
}

/**
 * The tool calls of one Codex thread, so each gets exactly one `tool_use` and one `tool_result`
 * however it surfaces: as items (`item/started`, `item/completed`), as a request svc refused, or
 * only in Codex's rollout (a command its sandbox refused, a patch that failed to apply).
 */
export class CodexToolCalls {
  /** Calls whose `tool_use` is out. */
  private readonly started = new Set<string>();
  /** Calls whose `tool_result` is out: each call gets exactly one. */
  private readonly finished = new Set<string>();
  /** The changes of each file-change item, by item id: its approval request names only the item. */
  private readonly changes = new Map<string, unknown[]>();
  /**
   * Requests answered decline or cancel, by item id, until Codex reports the item: a rejected
   * patch or escalation may leave no item at all, and the history must still show the attempt.
   */
  private readonly refused = new Map<string, { request: EventData<'control_request'>; message: string }>();
  /** Codex's own record of the thread, and how far it has been read. */
  private rollout: { path: string; offset: number } | undefined;

  /** From now on, calls missing at a turn's end are looked up in the rollout at `path`. */
  followRollout(path: string): void {
    this.rollout = { path, offset: 0 };
  }

  /** Keeps a file-change item's changes for the approval request that will name it. */
  noteItem(item: Json): void {
    if (item['type'] === 'fileChange' && Array.isArray(item['changes'])) this.changes.set(text(item['id']) ?? 'unknown', item['changes']);
  }

  /** The changes of the file-change item `itemId`, when it was announced. */
  changesOf(itemId: string): unknown[] | undefined {
    return this.changes.get(itemId);
  }

  /** A tool item started or completed: its `tool_use` the first time, its `tool_result` once it completes. */
  fromItem(kind: 'item/started' | 'item/completed', item: Json, tool: { name: string; input: Json }): AgentEvent[] {
    const id = text(item['id']) ?? 'unknown';
    const events: AgentEvent[] = [];
    if (!this.started.has(id)) {
      this.started.add(id);
      events.push({ type: 'tool_use', data: { tool_use_id: id, name: tool.name, input: tool.input } });
    }
    if (kind === 'item/completed' && !this.finished.has(id)) {
      this.refused.delete(id);
      this.finished.add(id);
      events.push({ type: 'tool_result', data: toolResultOf(item) });
    }
    return events;
  }

  /** Remembers a request of item `toolUseId` that was answered decline or cancel, and why. */
  refuse(toolUseId: string, request: EventData<'control_request'>, message: string): void {
    this.refused.set(toolUseId, { request, message });
  }

  /** At a turn's end: the calls Codex reported no item, or no completed item, for. */
  unreported(): AgentEvent[] {
    return [...this.unreportedRefusals(), ...this.unreportedCalls()];
  }

  /** The refused attempts Codex reported no item for: a `tool_use` and an error `tool_result` each. */
  private unreportedRefusals(): AgentEvent[] {
    const events: AgentEvent[] = [];
    for (const [id, { request, message }] of this.refused) {
      if (!this.started.has(id)) {
        this.started.add(id);
        events.push({ type: 'tool_use', data: { tool_use_id: id, name: request.tool_name, input: request.input } });
      }
      if (!this.finished.has(id)) events.push({ type: 'tool_result', data: { tool_use_id: id, content: message, is_error: true } });
      this.finished.add(id);
    }
    this.refused.clear();
    return events;
  }

  /**
   * The calls of the turn Codex recorded in its rollout but reported no item, or no completed
   * item, for: a `tool_use` where none was sent, and a `tool_result` with the output the model
   * was given.
   */
  private unreportedCalls(): AgentEvent[] {
    if (!this.rollout) return [];
    const read = readRolloutCalls(this.rollout.path, this.rollout.offset);
    this.rollout.offset = read.offset;
    const events: AgentEvent[] = [];
    for (const call of read.calls) {
      if (this.finished.has(call.callId)) continue;
      this.finished.add(call.callId);
      if (!this.started.has(call.callId)) {
        this.started.add(call.callId);
        const tool = toolOfCall(call);
        events.push({ type: 'tool_use', data: { tool_use_id: call.callId, name: tool.name, input: tool.input } });
      }
      events.push({
        type: 'tool_result',
        data: { tool_use_id: call.callId, content: call.output ?? 'Codex recorded no output for this call', is_error: callFailed(call.output) },
      });
    }
    return events;
  }
}
