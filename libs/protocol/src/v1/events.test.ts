import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, type EventType } from './events.js';
import { EXAMPLE_EVENTS } from './examples.js';
import { describeFieldErrors, validateIncomingEvent, type FieldError } from './validation.js';

function fieldsOf(value: unknown): string[] {
  const result = validateIncomingEvent(value);
  if (result.ok) throw new Error('expected the event to be rejected');
  return result.errors.map((e: FieldError) => e.field);
}

function withData(type: EventType, data: Record<string, unknown>) {
  return { ...EXAMPLE_EVENTS[type], data };
}

describe('protocol v1 events — valid examples', () => {
  it.each(EVENT_TYPES)('a valid %s event passes', (type) => {
    const result = validateIncomingEvent(EXAMPLE_EVENTS[type]);
    expect(result).toEqual({ ok: true, value: EXAMPLE_EVENTS[type] });
  });

  it('optional members are accepted when present', () => {
    const thinking = withData('assistant', { text: 'hmm', kind: 'thinking' });
    const subAgent = withData('tool_use', { tool_use_id: 't', name: 'Read', input: {}, parent_tool_use_id: 'toolu_9' });
    const stderr = withData('system', { level: 'warn', message: 'raw line', stream: 'stderr' });
    const always = withData('control_response', {
      request_id: 'r',
      decision: 'allow',
      updated_input: { command: 'ls' },
      scope: 'always',
      decided_by: 'u',
      decided_by_email: 'u@example.com',
    });
    for (const event of [thinking, subAgent, stderr, always]) expect(validateIncomingEvent(event).ok).toBe(true);
  });
});

describe('protocol v1 events — malformed shapes name the field', () => {
  const cases: Array<[string, unknown, string]> = [
    ['assistant without text', withData('assistant', {}), '/data/text'],
    ['assistant text not a string', withData('assistant', { text: 42 }), '/data/text'],
    ['assistant with an unknown kind', withData('assistant', { text: 'x', kind: 'poem' }), '/data/kind'],
    ['tool_use without name', withData('tool_use', { tool_use_id: 't', input: {} }), '/data/name'],
    ['tool_use with an array input', withData('tool_use', { tool_use_id: 't', name: 'Bash', input: [] }), '/data/input'],
    ['tool_use with an empty tool_use_id', withData('tool_use', { tool_use_id: '', name: 'Bash', input: {} }), '/data/tool_use_id'],
    ['tool_result without is_error', withData('tool_result', { tool_use_id: 't', content: 'x' }), '/data/is_error'],
    ['tool_result with object content', withData('tool_result', { tool_use_id: 't', content: {}, is_error: false }), '/data/content'],
    ['result with a string is_error', withData('result', { subtype: 'success', is_error: 'no' }), '/data/is_error'],
    ['result with fractional num_turns', withData('result', { subtype: 'success', is_error: false, num_turns: 1.5 }), '/data/num_turns'],
    ['progress with negative tokens', withData('progress', { input_tokens: -1, output_tokens: 0, cost_usd: 0 }), '/data/input_tokens'],
    ['progress without cost', withData('progress', { input_tokens: 1, output_tokens: 1 }), '/data/cost_usd'],
    ['system with an unknown level', withData('system', { level: 'loud', message: 'x' }), '/data/level'],
    ['system without message', withData('system', { level: 'info' }), '/data/message'],
    ['control_request without request_id', withData('control_request', { tool_name: 'Bash', input: {} }), '/data/request_id'],
    ['control_request without tool_name', withData('control_request', { request_id: 'r', input: {} }), '/data/tool_name'],
    ['control_response with decision "maybe"', withData('control_response', { request_id: 'r', decision: 'maybe', decided_by: 'u' }), '/data/decision'],
    ['control_response without decided_by', withData('control_response', { request_id: 'r', decision: 'allow' }), '/data/decided_by'],
    [
      'control_response with an unknown member',
      withData('control_response', { request_id: 'r', decision: 'allow', decided_by: 'u', sneaky: 1 }),
      '/data/sneaky',
    ],
    ['an unknown type', { ...EXAMPLE_EVENTS.system, type: 'telemetry' }, '/type'],
    ['a missing uid', { type: 'system', ts: EXAMPLE_EVENTS.system.ts, data: EXAMPLE_EVENTS.system.data }, '/uid'],
    ['a uid with a space', { ...EXAMPLE_EVENTS.system, uid: 'a b' }, '/uid'],
    ['a ts that is not RFC 3339', { ...EXAMPLE_EVENTS.system, ts: 'yesterday' }, '/ts'],
    ['data that is not an object', { ...EXAMPLE_EVENTS.system, data: 'hello' }, '/data'],
    ['an unknown envelope member', { ...EXAMPLE_EVENTS.system, id: '5' }, '/id'],
  ];

  it.each(cases)('%s → names %s', (_title, value, field) => {
    expect(fieldsOf(value)).toContain(field);
  });

  it('a non-object body names the body', () => {
    const result = validateIncomingEvent('hello');
    expect(result.ok).toBe(false);
    if (!result.ok) expect(describeFieldErrors(result.errors)).toMatch(/^\(body\) /);
  });

  it('envelope and data errors are reported together, under a prefix', () => {
    const result = validateIncomingEvent({ type: 'tool_use', uid: 'x', ts: 'soon', data: { name: 'Bash', input: {} } }, '/events/3');
    expect(result.ok).toBe(false);
    if (!result.ok) {
      const fields = result.errors.map((e) => e.field);
      expect(fields).toEqual(expect.arrayContaining(['/events/3/ts', '/events/3/data/tool_use_id']));
      expect(describeFieldErrors(result.errors)).toContain('/events/3/data/tool_use_id is required');
    }
  });
});
