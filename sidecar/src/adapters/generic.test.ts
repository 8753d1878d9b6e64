import { describe, expect, it } from 'vitest';
import { validateIncomingEvent } from '@svc/protocol';
import { genericAdapter } from './generic.js';

describe('generic adapter — any program', () => {
  it('every stdout line is an info system event, every stderr line a warn one, marked with its stream', () => {
    const out = genericAdapter.parseLine('compiling 3 files', 'stdout');
    const err = genericAdapter.parseLine('warning: unused variable', 'stderr');
    expect(out).toEqual([{ type: 'system', data: { level: 'info', message: 'compiling 3 files', stream: 'stdout' } }]);
    expect(err).toEqual([{ type: 'system', data: { level: 'warn', message: 'warning: unused variable', stream: 'stderr' } }]);
    for (const event of [...out, ...err]) expect(validateIncomingEvent({ ...event, uid: 'b:1', ts: '2026-11-22T09:00:00.000Z' }).ok).toBe(true);
  });

  it("a person's message is its text and a newline on the agent's stdin", () => {
    expect(genericAdapter.formatMessage!({ text: 'run the tests' })).toBe('run the tests\n');
  });

  it('runs the command as given, with the prompt as its first stdin line; it writes nothing for decisions', () => {
    expect(genericAdapter.launch({ command: 'python3', args: ['agent.py'], prompt: 'hello', autonomous: true })).toEqual({
      command: 'python3',
      args: ['agent.py'],
      stdinLines: ['hello'],
    });
    expect(genericAdapter.launch({ command: 'make', args: [], autonomous: true }).stdinLines).toEqual([]);
    expect(genericAdapter.formatDecision({ request_id: 'r', decision: 'allow', decided_by: 'a' }, { request_id: 'r', tool_name: 't', input: {} })).toBe('');
  });
});
