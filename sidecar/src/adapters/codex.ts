import type { EventData } from '@svc/protocol';
import { codexProviderArgs } from './codex-provider.js';
import { isObject, jsonLine, text, unparsedLine, type Adapter, type AgentEvent, type AgentLaunch, type AgentStream, type Json, type LaunchPlan } from './adapter.js';

const count = (value: unknown): number => (typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0);

/** What a Codex item does, as a tool call: its name and input (commands, file changes, MCP calls). */
function toolOf(item: Json): { name: string; input: Json } | undefined {
  switch (item['type']) {
    case 'command_execution':
      return { name: 'command_execution', input: { command: text(item['command']) ?? '' } };
    case 'file_change':
      return { name: 'file_change', input: { changes: Array.isArray(item['changes']) ? item['changes'] : [] } };
    case 'mcp_tool_call':
      return { name: `mcp__${text(item['server']) ?? 'unknown'}__${text(item['tool']) ?? 'unknown'}`, input: isObject(item['arguments']) ? item['arguments'] : {} };
    default:
      return undefined;
  }
}

function toolResultOf(item: Json): EventData<'tool_result'> {
  const id = text(item['id']) ?? 'unknown';
  if (item['type'] === 'command_execution') {
    const exitCode = item['exit_code'];
    return { tool_use_id: id, content: text(item['aggregated_output']) ?? '', is_error: (typeof exitCode === 'number' && exitCode !== 0) || item['status'] === 'failed' || item['status'] === 'declined' };
  }
  return { tool_use_id: id, content: JSON.stringify(item['result'] ?? item['changes'] ?? item['status'] ?? ''), is_error: item['status'] === 'failed' };
}

/**
 * Codex for autonomous workers: `codex exec --json <prompt>` (exec never asks for approval; its
 * sandbox policy decides). Items map to events: `agent_message` → `assistant`, `reasoning` →
 * `assistant` (thinking), a command/file change/MCP call → `tool_use` when it starts and
 * `tool_result` when it completes, `turn.completed` → `result` + `progress` (tokens summed over
 * the run's turns), `turn.failed` → a failed `result`, errors and the rest → `system`.
 * Interactive workers run under `codex app-server` (codex-app-server.ts).
 */
export function createCodexExecAdapter(): Adapter {
  const totals = { input: 0, output: 0, cached: 0 };
  const started = new Set<string>();
  let turns = 0;

  function itemEvents(kind: 'item.started' | 'item.completed', item: Json, line: string): AgentEvent[] {
    const id = text(item['id']) ?? 'unknown';
    if (item['type'] === 'agent_message') return kind === 'item.completed' ? [{ type: 'assistant', data: { text: text(item['text']) ?? '', kind: 'text' } }] : [];
    if (item['type'] === 'reasoning') return kind === 'item.completed' ? [{ type: 'assistant', data: { text: text(item['text']) ?? '', kind: 'thinking' } }] : [];
    const tool = toolOf(item);
    if (tool) {
      const events: AgentEvent[] = [];
      // A tool that completes without having been seen starting (exec reports some only once) gets its tool_use first.
      if (!started.has(id)) {
        started.add(id);
        events.push({ type: 'tool_use', data: { tool_use_id: id, name: tool.name, input: tool.input } });
      }
      if (kind === 'item.completed') events.push({ type: 'tool_result', data: toolResultOf(item) });
      return events;
    }
    if (item['type'] === 'error') return [{ type: 'system', data: { level: 'error', message: text(item['message']) ?? line, subtype: 'agent_error' } }];
    if (item['type'] === 'todo_list') return kind === 'item.completed' ? [{ type: 'system', data: { level: 'info', message: 'plan updated', subtype: 'todo_list', details: { items: Array.isArray(item['items']) ? item['items'] : [] } } }] : [];
    return [{ type: 'system', data: { level: 'debug', message: `codex item ${String(item['type'])}`, subtype: 'codex_item', details: item } }];
  }

  return {
    name: 'codex',
    endsAfterResult: false,

    launch(launch: AgentLaunch): LaunchPlan {
      if (!launch.autonomous) throw new Error('codex exec never asks for approval: an interactive worker runs under codex app-server (the sidecar picks it)');
      // exec appends piped stdin to the prompt: the sidecar closes stdin at once.
      return { command: launch.command, args: [...codexProviderArgs(launch), 'exec', '--json', '--skip-git-repo-check', ...launch.args, ...(launch.prompt === undefined ? [] : [launch.prompt])], stdinLines: [], closeStdin: true };
    },

    parseLine(line: string, stream: AgentStream): AgentEvent[] {
      const json = jsonLine(line, stream);
      if ('events' in json) return json.events;
      const parsed = json.object;
      switch (parsed['type']) {
        case 'thread.started':
          return [{ type: 'system', data: { level: 'info', message: 'Codex started', subtype: 'init', details: { thread_id: text(parsed['thread_id']) ?? null } } }];
        case 'turn.started':
          return [{ type: 'system', data: { level: 'debug', message: 'turn started', subtype: 'turn_started' } }];
        case 'item.started':
        case 'item.completed':
          return isObject(parsed['item']) ? itemEvents(parsed['type'], parsed['item'], line) : [unparsedLine(line, stream, 'item without item')];
        case 'turn.completed': {
          turns++;
          const usage = isObject(parsed['usage']) ? parsed['usage'] : {};
          totals.input += count(usage['input_tokens']);
          totals.output += count(usage['output_tokens']);
          totals.cached += count(usage['cached_input_tokens']);
          return [
            { type: 'result', data: { subtype: 'success', is_error: false, num_turns: turns } },
            // Codex reports no price: tokens only.
            { type: 'progress', data: { input_tokens: totals.input, output_tokens: totals.output, cache_read_tokens: totals.cached, cost_usd: 0 } },
          ];
        }
        case 'turn.failed': {
          turns++;
          const error = isObject(parsed['error']) ? text(parsed['error']['message']) : undefined;
          return [{ type: 'result', data: { subtype: 'error', is_error: true, num_turns: turns, ...(error ? { text: error } : {}) } }];
        }
        case 'error':
          return [{ type: 'system', data: { level: 'error', message: text(parsed['message']) ?? line, subtype: 'agent_error' } }];
        default:
          return [unparsedLine(line, stream, `unknown type ${JSON.stringify(parsed['type'])}`)];
      }
    },

    formatDecision(): string {
      // exec never asks.
      return '';
    },
  };
}
