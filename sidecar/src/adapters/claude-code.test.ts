import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONTROL_WITHDRAWN_SUBTYPE, DEFAULT_DENY_MESSAGE, validateIncomingEvent, type EventData } from '@svc/protocol';
import type { AgentEvent } from './adapter.js';
import { claudeCodeAdapter, INITIALIZE_REQUEST_ID } from './claude-code.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/claude-code');
const lines = (name: string) =>
  readFileSync(path.join(FIXTURES, name), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '');
const parseAll = (name: string) => lines(name).flatMap((line) => claudeCodeAdapter.parseLine(line, 'stdout'));

/** The event types each real transcript must produce, in order (checked by hand against the transcripts). */
const EXPECTED: Record<string, string[]> = {
  'a-print-default.stdout.jsonl': ['system', 'assistant', 'tool_use', 'system', 'tool_result', 'assistant', 'result', 'progress'],
  'b-print-bypass.stdout.jsonl': ['system', 'assistant', 'tool_use', 'tool_result', 'assistant', 'result', 'progress'],
  'c-stdio-allow.stdout.jsonl': ['system', 'system', 'assistant', 'tool_use', 'control_request', 'tool_result', 'assistant', 'result', 'progress'],
  'c-stdio-deny.stdout.jsonl': ['system', 'system', 'assistant', 'tool_use', 'control_request', 'tool_result', 'assistant', 'result', 'progress'],
  'c-stdio-deny-interrupt.stdout.jsonl': ['system', 'system', 'assistant', 'tool_use', 'control_request', 'tool_result', 'system', 'result', 'progress'],
};

function valid(event: AgentEvent, n: number) {
  return validateIncomingEvent({ ...event, uid: `boot:${n}`, ts: '2026-11-22T04:26:30.000Z' });
}

describe('claude-code adapter — the real transcripts', () => {
  for (const [name, types] of Object.entries(EXPECTED)) {
    it(`${name}: every line mapped, the expected sequence, every event valid v1`, () => {
      const events = parseAll(name);
      expect(events.map((e) => e.type)).toEqual(types);
      for (const [n, event] of events.entries()) expect(valid(event, n), JSON.stringify(event)).toMatchObject({ ok: true });
      expect(events.some((e) => e.type === 'system' && e.data.subtype === 'unparsed_line')).toBe(false);
    });
  }

  it("a permission request keeps the agent's request_id, tool, input and tool_use_id", () => {
    const request = parseAll('c-stdio-allow.stdout.jsonl').find((e) => e.type === 'control_request')!;
    expect(request.data).toEqual({
      request_id: '8644f6b6-e495-48fd-bf4f-f4e4fc33a306',
      tool_name: 'Bash',
      input: { command: 'echo hello > out.txt', description: 'Write hello to out.txt' },
      tool_use_id: 'toolu_mock_01',
      description: 'Write hello to out.txt',
    });
  });

  it('text and tool blocks carry their message id and tool ids; a tool result its text', () => {
    const events = parseAll('c-stdio-allow.stdout.jsonl');
    expect(events.find((e) => e.type === 'assistant')!.data).toEqual({
      text: 'I will create out.txt containing hello.',
      kind: 'text',
      message_id: 'msg_mock_0001',
    });
    expect(events.find((e) => e.type === 'tool_use')!.data).toMatchObject({
      tool_use_id: 'toolu_mock_01',
      name: 'Bash',
      input: { command: 'echo hello > out.txt' },
    });
    expect(events.find((e) => e.type === 'tool_result')!.data).toEqual({
      tool_use_id: 'toolu_mock_01',
      content: '(Bash completed with no output)',
      is_error: false,
    });
  });

  it('result gives the turn and a cumulative progress (modelUsage and total_cost_usd, never the per-turn usage)', () => {
    const events = parseAll('c-stdio-deny.stdout.jsonl');
    expect(events.find((e) => e.type === 'result')!.data).toMatchObject({ subtype: 'success', is_error: false });
    expect(events.find((e) => e.type === 'progress')!.data).toEqual({ input_tokens: 26864, output_tokens: 48, cache_read_tokens: 0, cost_usd: 0.108416 });
  });

  it("a withdrawn request (control_cancel_request) becomes the protocol's withdrawal", () => {
    const [event] = claudeCodeAdapter.parseLine('{"type":"control_cancel_request","request_id":"req-9"}', 'stdout');
    expect(event).toEqual({ type: 'system', data: expect.objectContaining({ subtype: CONTROL_WITHDRAWN_SUBTYPE, details: { request_id: 'req-9' } }) });
  });

  it('a line it cannot parse becomes a warn system event with the raw line; stderr is kept and marked', () => {
    for (const line of ['not json at all', '[1,2]', '{"type":"brand_new_kind"}', '{"type":"assistant"}']) {
      const [event] = claudeCodeAdapter.parseLine(line, 'stdout');
      expect(event).toMatchObject({ type: 'system', data: { level: 'warn', message: line, subtype: 'unparsed_line' } });
    }
    expect(claudeCodeAdapter.parseLine('Error: something', 'stderr')).toEqual([
      { type: 'system', data: { level: 'warn', message: 'Error: something', stream: 'stderr' } },
    ]);
    expect(claudeCodeAdapter.parseLine('   ', 'stdout')).toEqual([]);
  });
});

describe('claude-code adapter — what it writes to the agent', () => {
  const request: EventData<'control_request'> = { request_id: 'r1', tool_name: 'Bash', input: { command: 'echo hello > out.txt' } };

  it("a person's message is a stream-json user message, as the fixture's second turn was sent", () => {
    const [, , , , secondTurn] = readFileSync(path.join(FIXTURES, 'e-multiturn-interrupt.stdin.jsonl'), 'utf8').split('\n');
    const line = claudeCodeAdapter.formatMessage!({ text: 'Do it again' });
    expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(line)).toEqual(JSON.parse(secondTurn!));
  });

  it("a person's message with images: the Messages API's base64 image blocks, then its text; an image alone has no empty text block", () => {
    const images = [{ media_type: 'image/png' as const, data: 'iVBORw0KGgo=' }];
    const withText = JSON.parse(claudeCodeAdapter.formatMessage!({ text: 'what is this?', id: 'msg_i', images })) as { message: { content: unknown[] } };
    expect(withText.message.content).toEqual([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'text', text: 'what is this?' },
    ]);
    const alone = JSON.parse(claudeCodeAdapter.formatMessage!({ text: '', images })) as { message: { content: Array<{ type: string }> } };
    expect(alone.message.content.map((block) => block.type)).toEqual(['image']);
    expect(claudeCodeAdapter.takesImages).toBe(true);
  });

  it("a person's interrupt is the `interrupt` control request the fixture sent (an id of the sidecar's own)", () => {
    const sent = JSON.parse(readFileSync(path.join(FIXTURES, 'e-multiturn-interrupt.stdin.jsonl'), 'utf8').split('\n')[5]!) as Record<string, unknown>;
    const line = claudeCodeAdapter.formatInterrupt!();
    expect(line.endsWith('\n')).toBe(true);
    const ours = JSON.parse(line) as Record<string, unknown>;
    expect(ours['request_id']).toMatch(/^svc_interrupt_[0-9a-f]{12}$/);
    expect({ ...ours, request_id: sent['request_id'] }).toEqual(sent);
    expect(claudeCodeAdapter.formatInterrupt!()).not.toBe(line);
  });

  it('launches stream-json in and out with the stdio permission tool, handshake then prompt on stdin', () => {
    const plan = claudeCodeAdapter.launch({ command: 'claude', args: ['--model', 'x'], prompt: 'Create out.txt', autonomous: false });
    expect(plan.args).toEqual([
      '-p',
      '--input-format',
      'stream-json',
      '--output-format',
      'stream-json',
      '--verbose',
      '--permission-prompt-tool',
      'stdio',
      '--model',
      'x',
    ]);
    expect(plan.stdinLines.map((l) => JSON.parse(l))).toEqual([
      { type: 'control_request', request_id: INITIALIZE_REQUEST_ID, request: { subtype: 'initialize', hooks: {} } },
      { type: 'user', session_id: '', parent_tool_use_id: null, message: { role: 'user', content: [{ type: 'text', text: 'Create out.txt' }] } },
    ]);
  });

  it("an allow always carries updatedInput (the request's input when unchanged), exactly as the real CLI accepted it", () => {
    const accepted = JSON.parse(lines('c-stdio-allow.stdin.jsonl').at(-1)!);
    const written = claudeCodeAdapter.formatDecision(
      { request_id: '8644f6b6-e495-48fd-bf4f-f4e4fc33a306', decision: 'allow', updated_input: accepted.response.response.updatedInput, decided_by: 'alice' },
      request,
    );
    expect(written.endsWith('\n')).toBe(true);
    expect(JSON.parse(written)).toEqual(accepted);
    expect(JSON.parse(claudeCodeAdapter.formatDecision({ request_id: 'r1', decision: 'allow', decided_by: 'alice' }, request)).response.response).toEqual({
      behavior: 'allow',
      updatedInput: { command: 'echo hello > out.txt' },
    });
  });

  it('a deny carries a non-empty message, as the real CLI accepted it', () => {
    const accepted = JSON.parse(lines('c-stdio-deny.stdin.jsonl').at(-1)!);
    const written = claudeCodeAdapter.formatDecision(
      { request_id: accepted.response.request_id, decision: 'deny', message: accepted.response.response.message, decided_by: 'alice' },
      request,
    );
    expect(JSON.parse(written)).toEqual(accepted);
    expect(
      JSON.parse(claudeCodeAdapter.formatDecision({ request_id: 'r1', decision: 'deny', message: ' ', decided_by: 'alice' }, request)).response.response,
    ).toEqual({
      behavior: 'deny',
      message: DEFAULT_DENY_MESSAGE,
    });
  });

  it('a deny with interrupt ends the turn, as the real CLI accepted it', () => {
    const accepted = JSON.parse(lines('c-stdio-deny-interrupt.stdin.jsonl').at(-1)!);
    const written = claudeCodeAdapter.formatDecision(
      { request_id: accepted.response.request_id, decision: 'deny', message: accepted.response.response.message, interrupt: true, decided_by: 'alice' },
      request,
    );
    expect(JSON.parse(written)).toEqual(accepted);
  });
});
