import type { EventType } from './events.js';
import type { IncomingEvent } from './envelope.js';

/** One valid incoming event of each type: documentation, OpenAPI examples and test input. */
export const EXAMPLE_EVENTS: { [K in EventType]: IncomingEvent<K> } = {
  assistant: {
    type: 'assistant',
    uid: 'boot1:1',
    ts: '2026-11-22T05:30:00.000Z',
    data: { text: 'I will list the files first.', message_id: 'msg_01' },
  },
  tool_use: {
    type: 'tool_use',
    uid: 'boot1:2',
    ts: '2026-11-22T05:30:00.100Z',
    data: { tool_use_id: 'toolu_01', name: 'Bash', input: { command: 'ls -la' } },
  },
  tool_result: {
    type: 'tool_result',
    uid: 'boot1:3',
    ts: '2026-11-22T05:30:00.200Z',
    data: { tool_use_id: 'toolu_01', content: 'total 8\nREADME.md', is_error: false },
  },
  result: {
    type: 'result',
    uid: 'boot1:4',
    ts: '2026-11-22T05:30:01.000Z',
    data: { subtype: 'success', is_error: false, num_turns: 2, duration_ms: 1830 },
  },
  progress: {
    type: 'progress',
    uid: 'boot1:5',
    ts: '2026-11-22T05:30:01.001Z',
    data: { input_tokens: 1200, output_tokens: 340, cache_read_tokens: 800, cost_usd: 0.0123 },
  },
  system: {
    type: 'system',
    uid: 'boot1:6',
    ts: '2026-11-22T05:30:01.002Z',
    data: { level: 'info', subtype: 'init', message: 'agent ready' },
  },
  control_request: {
    type: 'control_request',
    uid: 'boot1:7',
    ts: '2026-11-22T05:30:00.050Z',
    data: { request_id: '6f1c9b2e-0d7a-4a55-9c1e-2b7f0a3d4e5f', tool_name: 'Bash', input: { command: 'rm -rf build' }, tool_use_id: 'toolu_02' },
  },
  control_response: {
    type: 'control_response',
    // As a sidecar posts one: its own permission engine's answer (a person decides through POST …/control).
    uid: 'boot1:8',
    ts: '2026-11-22T05:30:00.051Z',
    data: { request_id: '6f1c9b2e-0d7a-4a55-9c1e-2b7f0a3d4e5f', decision: 'deny', message: 'denied by the rule Bash(rm *)', decided_by: 'policy' },
  },
};
