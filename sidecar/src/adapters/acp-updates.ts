import type { ContentBlock, SessionUpdate, ToolCallContent, ToolCallUpdate, ToolKind } from '@agentclientprotocol/sdk';
import { createHash } from 'node:crypto';
import { SYSTEM_SUBTYPES } from '@svc/protocol';
import { isObject, type AgentEvent, type Json } from './adapter.js';
import { commandOfArgv } from './shell-command.js';

/**
 * What an ACP agent's `session/update`s become in svc's history (docs/sidecar.md, "ACP"):
 * message and thought chunks → `assistant` (gathered, so that a history is not a row per
 * token), tool calls and their updates → `tool_use` / `tool_result` with the agent's ids, a
 * plan → a `system` event, the rest → `system` events of their own.
 */

/** The svc tool name of each ACP tool kind, when the agent gives no name of its own. */
const KIND_TOOL_NAMES: Readonly<Record<ToolKind, string>> = {
  read: 'read',
  edit: 'edit',
  delete: 'delete',
  move: 'move',
  search: 'search',
  execute: 'execute',
  think: 'think',
  fetch: 'fetch',
  switch_mode: 'switch_mode',
  other: 'other',
};

/**
 * The most of a tool's result kept in its event: at six bytes a character escaped (control
 * characters), well under the gateway's body limit, so one large result cannot stop the outbox.
 */
const RESULT_CHARS = 256 * 1024;
/** The most of one string of a tool's input kept in its events (what rules match is never cut: `RULE_FIELDS`). */
export const INPUT_STRING_CHARS = 64 * 1024;
/** The fields of an input that rules match (`request-rules.ts`' primary fields this adapter sets). */
export const RULE_FIELDS = ['command', 'file_path', 'path', 'changes'] as const;

/** Text cut to `max` characters (never inside a surrogate pair), said so at its end. */
function boundedText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  if (/[\uD800-\uDBFF]/.test(text[end - 1]!)) end--;
  return `${text.slice(0, end)}… [${text.length - end} more characters not kept]`;
}

/** An id svc can hold (at most 256 characters): the agent's own, or a digest of one that is longer. */
export function boundedId(id: string): string {
  return id.length <= 200 ? id : `sha256:${createHash('sha256').update(id).digest('hex')}`;
}

/** A tool input as events keep it: each long string cut (a written file's content, say), nested values kept while small. */
export function boundedInput(input: Json): Json {
  const bounded: Json = {};
  for (const [key, value] of Object.entries(input)) {
    if ((RULE_FIELDS as readonly string[]).includes(key)) bounded[key] = value;
    else if (typeof value === 'string') bounded[key] = boundedText(value, INPUT_STRING_CHARS);
    else if (value !== null && typeof value === 'object' && JSON.stringify(value).length > INPUT_STRING_CHARS)
      bounded[key] = `[${JSON.stringify(value).length} characters not kept]`;
    else bounded[key] = value;
  }
  return bounded;
}

/** A tool name svc can hold (an identifier of at most 256 characters). */
const TOOL_NAME = /^[A-Za-z0-9_.:-]{1,128}$/;

/** A call that runs a command, whatever kind the agent gives it (codex-acp calls `cat x && curl …` a `read`). */
const runsCommand = (call: Pick<ToolCallUpdate, 'rawInput'>) =>
  isObject(call.rawInput) && (typeof call.rawInput['command'] === 'string' || Array.isArray(call.rawInput['command']));

/**
 * The name permission rules match a tool call by: the agent's own (`name`, or the tool name
 * Claude's ACP build puts in `_meta.claudeCode.toolName`), else `execute` for a call with a
 * command, else its ACP kind (`edit`, `read`, …), else `other`.
 */
export function acpToolName(call: Pick<ToolCallUpdate, 'name' | 'kind' | '_meta' | 'rawInput'>): string {
  const meta = isObject(call._meta) && isObject(call._meta['claudeCode']) ? call._meta['claudeCode'] : undefined;
  for (const candidate of [call.name, meta?.['toolName']]) if (typeof candidate === 'string' && TOOL_NAME.test(candidate)) return candidate;
  if (runsCommand(call)) return 'execute';
  return KIND_TOOL_NAMES[call.kind ?? 'other'] ?? 'other';
}

/**
 * The input rules match a tool call's argument against (`request-rules.ts`' primary fields):
 * the agent's raw input, with `command` for a command (its text — an argv without its shell
 * wrapper —, or the title the agent gave an `execute` call), `file_path` for a call on one
 * place, and `changes` (every file) for a call on several, so that a rule must hold for each.
 */
export function acpToolInput(call: Pick<ToolCallUpdate, 'kind' | 'rawInput' | 'locations' | 'title' | 'content'>): Json {
  const raw: Json = isObject(call.rawInput) ? { ...call.rawInput } : call.rawInput === undefined || call.rawInput === null ? {} : { input: call.rawInput };
  if (typeof raw['command'] !== 'string') {
    // Codex's ACP build gives its argv, its shell wrapper and all: rules are about what runs inside.
    const argv = Array.isArray(raw['command']) ? raw['command'].map(String) : undefined;
    const command = argv ? commandOfArgv(argv) : call.kind === 'execute' ? call.title : undefined;
    if (typeof command === 'string') raw['command'] = command;
  }
  if (typeof raw['command'] === 'string') return raw;
  const places = (call.locations ?? []).map((location) => location.path);
  if (places.length > 1) raw['changes'] = places.map((place) => ({ path: place }));
  else if (places.length === 1 && typeof raw['file_path'] !== 'string' && typeof raw['path'] !== 'string') raw['file_path'] = places[0];
  // The file as the call would leave it, for the person asked (Gemini CLI gives it only as a diff).
  const diffs = (call.content ?? []).filter((item) => item.type === 'diff');
  if (diffs.length === 1 && raw['content'] === undefined && raw['changes'] === undefined) raw['content'] = diffs[0]!.newText;
  return raw;
}

/** A content block as text for the history: text as it is, anything else named. */
function contentText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'resource_link':
      return `[${block.name}](${block.uri})`;
    case 'resource':
      return 'text' in block.resource ? block.resource.text : `[${block.resource.uri}]`;
    default:
      return `[${block.type}]`;
  }
}

/** A tool call's content as its result's text: text blocks, the file a diff changed, the terminal it ran in. */
function toolContentText(content: readonly ToolCallContent[] | null | undefined, rawOutput: unknown): string {
  const parts = (content ?? []).map((item) => {
    if (item.type === 'content') return contentText(item.content);
    if (item.type === 'diff') return `changed ${item.path}`;
    return `terminal ${item.terminalId}`;
  });
  if (parts.length === 0 && rawOutput !== undefined && rawOutput !== null) parts.push(typeof rawOutput === 'string' ? rawOutput : JSON.stringify(rawOutput));
  return boundedText(parts.join('\n'), RESULT_CHARS);
}

/** The tool calls of one run: each call's `tool_use` once (from whichever message names it first), and its `tool_result` once. */
export class AcpToolCalls {
  private readonly used = new Set<string>();
  private readonly finished = new Set<string>();
  /** What the agent said of each call so far: a `tool_call`'s fields, brought up to date by its updates. */
  private readonly calls = new Map<string, ToolCallUpdate>();

  /** A call as known after this message of the agent's about it (fields it leaves out are kept from before). */
  remember(update: ToolCallUpdate): ToolCallUpdate {
    const merged: ToolCallUpdate = { ...this.calls.get(update.toolCallId), toolCallId: update.toolCallId };
    for (const [key, value] of Object.entries(update)) if (value !== undefined && value !== null) (merged as Record<string, unknown>)[key] = value;
    this.calls.set(update.toolCallId, merged);
    return merged;
  }

  /** The `tool_use` of a call not seen before (an agent may name a call first in a permission request). */
  use(call: ToolCallUpdate): AgentEvent[] {
    if (this.used.has(call.toolCallId)) return [];
    this.used.add(call.toolCallId);
    return [{ type: 'tool_use', data: { tool_use_id: boundedId(call.toolCallId), name: acpToolName(call), input: boundedInput(acpToolInput(call)) } }];
  }

  /** The `tool_result` of a call that completed or failed (once). */
  end(call: ToolCallUpdate): AgentEvent[] {
    if ((call.status !== 'completed' && call.status !== 'failed') || this.finished.has(call.toolCallId)) return [];
    this.finished.add(call.toolCallId);
    return [
      ...this.use(call),
      {
        type: 'tool_result',
        data: { tool_use_id: boundedId(call.toolCallId), content: toolContentText(call.content, call.rawOutput), is_error: call.status === 'failed' },
      },
    ];
  }

  /** A call that never ended (the turn was cancelled): its result says so. */
  abandon(why: string): AgentEvent[] {
    const open = [...this.used].filter((id) => !this.finished.has(id));
    open.forEach((id) => this.finished.add(id));
    return open.map((id) => ({ type: 'tool_result', data: { tool_use_id: boundedId(id), content: why, is_error: true } }));
  }
}

/** The `system` event of an update that is not a message, a thought or a tool call. */
function systemOf(update: SessionUpdate): AgentEvent | undefined {
  switch (update.sessionUpdate) {
    case 'plan':
      return {
        type: 'system',
        data: {
          level: 'info',
          message: update.entries.map((entry) => `[${entry.status}] ${entry.content}`).join('\n') || '(an empty plan)',
          subtype: SYSTEM_SUBTYPES.agentPlan,
          details: { entries: update.entries.map(({ content, priority, status }) => ({ content, priority, status })) },
        },
      };
    case 'usage_update':
      return {
        type: 'system',
        data: {
          level: 'debug',
          message: `context: ${update.used} of ${update.size} tokens${update.cost ? `; ${update.cost.amount} ${update.cost.currency} so far` : ''}`,
          subtype: SYSTEM_SUBTYPES.agentUsage,
          details: { used: update.used, size: update.size, ...(update.cost ? { cost: { amount: update.cost.amount, currency: update.cost.currency } } : {}) },
        },
      };
    case 'notice':
      return {
        type: 'system',
        data: {
          level: update.severity === 'error' ? 'error' : update.severity === 'warning' ? 'warn' : 'info',
          message: update.description ? `${update.title}: ${update.description}` : update.title,
          subtype: SYSTEM_SUBTYPES.agentNotice,
        },
      };
    case 'current_mode_update':
      return { type: 'system', data: { level: 'debug', message: `mode: ${update.currentModeId}`, subtype: SYSTEM_SUBTYPES.agentMode } };
    default:
      // The commands it offers, its config options, its title, compaction: nothing a viewer acts on.
      return undefined;
  }
}

/** How long streamed text is gathered before the viewers see it. */
const GATHER_MS = 200;
/** The most text gathered into one `assistant` event. */
const GATHER_CHARS = 16_384;

/**
 * Turns `session/update`s into events, in order: consecutive message (or thought) chunks are
 * gathered into one `assistant` event, given out when something else comes, after `GATHER_MS`,
 * past `GATHER_CHARS`, or when the turn ends (`flush`).
 */
export function createAcpUpdates(emit: (event: AgentEvent) => void, calls: AcpToolCalls) {
  let text = '';
  let kind: 'text' | 'thinking' = 'text';
  let messageId: string | undefined;
  let timer: NodeJS.Timeout | undefined;

  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (text === '') return;
    emit({ type: 'assistant', data: { text, ...(kind === 'thinking' ? { kind } : {}), ...(messageId ? { message_id: messageId } : {}) } });
    text = '';
  };

  return {
    flush,
    update(update: SessionUpdate): void {
      if (update.sessionUpdate === 'agent_message_chunk' || update.sessionUpdate === 'agent_thought_chunk') {
        const chunkKind = update.sessionUpdate === 'agent_thought_chunk' ? 'thinking' : 'text';
        const chunkId = typeof update.messageId === 'string' && update.messageId !== '' ? update.messageId.slice(0, 256) : undefined;
        if (chunkKind !== kind || chunkId !== messageId) flush();
        kind = chunkKind;
        messageId = chunkId;
        text += contentText(update.content);
        if (text.length >= GATHER_CHARS) flush();
        else timer ??= setTimeout(flush, GATHER_MS);
        return;
      }
      // A person's own words (echoed, or replayed by `session/load`) are in the history already.
      if (update.sessionUpdate === 'user_message_chunk') return;
      flush();
      if (update.sessionUpdate === 'tool_call' || update.sessionUpdate === 'tool_call_update') {
        // A pending call is still being formed (its input may come later): its tool_use waits for it to run, end, or be asked about.
        const call = calls.remember(update);
        return [...(call.status && call.status !== 'pending' ? calls.use(call) : []), ...calls.end(call)].forEach(emit);
      }
      const system = systemOf(update);
      if (system) emit(system);
    },
  };
}
