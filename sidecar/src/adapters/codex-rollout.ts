import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { isObject, text, type Json } from './adapter.js';

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
