import { closeSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { isObject, text, type ConversationPlace, type Json } from './adapter.js';
import { agentRecordLines } from './agent-record.js';

/** One tool call as Codex recorded it in its rollout: what the model asked and what it was told. */
export interface RolloutCall {
  callId: string;
  /** Codex's tool: `exec_command`, `apply_patch`, … */
  name: string;
  /** The call's arguments (a JSON object) or, for a freeform tool like `apply_patch`, its text. */
  input: string;
  /** What Codex handed the model back, when it did. */
  output?: string;
}

/**
 * Reads the tool calls Codex recorded in its rollout (`thread.path`, JSON lines of
 * `{type: "response_item", payload}`) from `offset` on, up to the last whole line. The rollout is
 * the one place a call Codex emitted no item for (a command its sandbox refused, a rejected
 * patch) is written down, with the output the model saw.
 */
export function readRolloutCalls(file: string, offset: number): { calls: RolloutCall[]; offset: number } {
  let bytes: Buffer;
  try {
    const size = statSync(file).size;
    if (size <= offset) return { calls: [], offset };
    bytes = Buffer.alloc(size - offset);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, bytes, 0, bytes.length, offset);
    } finally {
      closeSync(fd);
    }
  } catch {
    return { calls: [], offset };
  }
  const end = bytes.lastIndexOf(0x0a) + 1;
  const calls = new Map<string, RolloutCall>();
  for (const line of bytes.subarray(0, end).toString('utf8').split('\n')) {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      continue;
    }
    if (!isObject(record) || record['type'] !== 'response_item' || !isObject(record['payload'])) continue;
    const payload: Json = record['payload'];
    const callId = text(payload['call_id']);
    if (!callId) continue;
    switch (payload['type']) {
      case 'function_call':
      case 'custom_tool_call':
        calls.set(callId, { callId, name: text(payload['name']) ?? 'unknown', input: text(payload['arguments']) ?? text(payload['input']) ?? '' });
        break;
      case 'function_call_output':
      case 'custom_tool_call_output': {
        const call = calls.get(callId);
        const output = payload['output'];
        if (call) call.output = typeof output === 'string' ? output : JSON.stringify(output);
        break;
      }
    }
  }
  return { calls: [...calls.values()], offset: offset + end };
}

/** The paths a patch in Codex's format touches (`*** Add File: x`, `*** Update File: x`, `*** Delete File: x`, `*** Move to: y`). */
export function pathsOfPatch(patch: string): string[] {
  return [...patch.matchAll(/^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$/gm)].map((match) => match[1]!.trim());
}

/**
 * The `clientUserMessageId` of a turn's input (`turn/start`, `turn/steer`): the `message_id`s of
 * the people's messages in it. Codex keeps it in its rollout as the user message's `client_id`,
 * which is how a sidecar started again tells whether Codex took a message before the crash.
 */
export function clientUserMessageId(messages: ReadonlyArray<{ id?: string | undefined }>): string | undefined {
  const ids = messages.flatMap((message) => (message.id === undefined ? [] : [message.id]));
  return ids.length > 0 ? ids.join(' ') : undefined;
}

/** The subdirectories of `directory` named by digits (a year, month or day of Codex's), the latest first. */
function datedDirectories(directory: string): string[] {
  try {
    return readdirSync(directory, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && /^\d+$/.test(entry.name))
      .map((entry) => entry.name)
      .sort()
      .reverse()
      .map((name) => path.join(directory, name));
  } catch {
    return [];
  }
}

/** The most days of Codex's sessions directory searched for a rollout (the sandbox's files are the agent's: it could plant many). */
const ROLLOUT_DAYS_SEARCHED = 1000;

/** The names in a directory; none when it cannot be read. */
function namesIn(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}

/**
 * Where Codex keeps a thread's rollout: `$CODEX_HOME` (else `~/.codex`)
 * `/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl`, the latest day first.
 */
function rolloutOf(place: ConversationPlace): { directory: string; file: string } | undefined {
  const sessions = path.join(place.env?.['CODEX_HOME'] ?? path.join(place.home, '.codex'), 'sessions');
  const suffix = `-${place.conversationId}.jsonl`;
  let days = 0;
  for (const year of datedDirectories(sessions))
    for (const month of datedDirectories(year))
      for (const day of datedDirectories(month)) {
        if (++days > ROLLOUT_DAYS_SEARCHED) return undefined;
        const name = namesIn(day).find((entry) => entry.startsWith('rollout-') && entry.endsWith(suffix));
        if (name) return { directory: day, file: path.join(day, name) };
      }
  return undefined;
}

/**
 * Whether Codex took the message: its rollout records a user message whose `client_id` names it
 * (`clientUserMessageId`). Codex cannot be made to forget one it took but never answered (its own
 * state marks that turn interrupted, and says so to the model when the thread resumes), so taken
 * is recorded. A rollout that cannot be found or read says nothing: taken, so nothing is handed over twice.
 */
export function rolloutHoldsMessage(place: ConversationPlace, messageId: string): boolean {
  const rollout = rolloutOf(place);
  const lines = rollout && agentRecordLines(rollout.directory, rollout.file);
  if (!lines) return true;
  return lines.some((line) => {
    if (!line.includes(messageId)) return false;
    try {
      const record = JSON.parse(line) as { type?: unknown; payload?: { type?: unknown; item?: { type?: unknown; client_id?: unknown } } };
      const item = record.payload?.item;
      return (
        record.type === 'event_msg' &&
        record.payload?.type === 'item_completed' &&
        item?.type === 'UserMessage' &&
        typeof item.client_id === 'string' &&
        item.client_id.split(' ').includes(messageId)
      );
    } catch {
      // A line cut short by the crash: not a record of anything.
      return false;
    }
  });
}
