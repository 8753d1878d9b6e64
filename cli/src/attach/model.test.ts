import { describe, expect, it } from 'vitest';
import { AttachModel } from './model.js';
import { eventFactory } from './test-events.js';

describe('the attach model', () => {
  it('applies events once, in id order: a repeat (after a reconnect) is ignored', () => {
    const model = new AttachModel({ readOnly: false });
    const event = eventFactory();
    const first = event('assistant', { text: 'a' });
    const second = event('assistant', { text: 'b' });
    expect(model.apply(first)).toBe(true);
    expect(model.apply(second)).toBe(true);
    expect(model.apply(first)).toBe(false);
    expect(model.events.map((e) => e.id)).toEqual(['1', '2']);
    expect(model.lastId).toBe('2');
  });

  it('open requests queue in arrival order; a decision or a withdrawal closes one', () => {
    const model = new AttachModel({ readOnly: false });
    const event = eventFactory();
    model.apply(event('control_request', { request_id: 'r1', tool_name: 'A', input: {} }));
    model.apply(event('control_request', { request_id: 'r2', tool_name: 'B', input: {} }));
    expect(model.prompt()?.data.request_id).toBe('r1');
    expect(model.openCount()).toBe(2);
    model.apply(event('system', { level: 'info', message: 'withdrawn', subtype: 'control_withdrawn', details: { request_id: 'r1' } }));
    expect(model.prompt()?.data.request_id).toBe('r2');
    expect(model.notices.at(-1)?.text).toBe('request r1 withdrawn by the agent');
    model.apply(event('control_response', { request_id: 'r2', decision: 'deny', decided_by: 'policy:timeout', message: 'late' }));
    expect(model.prompt()).toBeUndefined();
    expect(model.notices.at(-1)?.text).toBe('denied: decided by the timeout policy');
  });

  it('a decision made here closes the prompt at once, without a "decided by" notice when its event arrives', () => {
    const model = new AttachModel({ readOnly: false });
    const event = eventFactory();
    model.apply(event('control_request', { request_id: 'r1', tool_name: 'A', input: {} }));
    model.decided('r1');
    expect(model.prompt()).toBeUndefined();
    model.apply(event('control_response', { request_id: 'r1', decision: 'allow', decided_by: 'me' }));
    expect(model.notices).toEqual([]);
  });

  it("keeps the latest progress and result, and the agent's exit; read-only hides prompts", () => {
    const model = new AttachModel({ readOnly: false });
    const event = eventFactory();
    model.apply(event('progress', { input_tokens: 1, output_tokens: 2, cost_usd: 0.1 }));
    model.apply(event('progress', { input_tokens: 10, output_tokens: 20, cost_usd: 0.2 }));
    model.apply(event('result', { subtype: 'success', is_error: false }));
    model.apply(event('control_request', { request_id: 'r1', tool_name: 'A', input: {} }));
    model.apply(event('system', { level: 'info', message: 'exit', subtype: 'agent_exit', details: { code: 0 } }));
    expect(model.progress?.input_tokens).toBe(10);
    expect(model.result?.subtype).toBe('success');
    expect(model.agentExit).toBe(0);
    model.setReadOnly('the worker is completed');
    expect(model.prompt()).toBeUndefined();
    expect(model.notices.at(-1)?.text).toBe('read-only: the worker is completed');
  });

  it('scrolls within the history', () => {
    const model = new AttachModel({ readOnly: false });
    const event = eventFactory();
    for (let i = 0; i < 5; i++) model.apply(event('assistant', { text: String(i) }));
    model.scrollBy(100);
    expect(model.scroll).toBe(4);
    model.scrollBy(-100);
    expect(model.scroll).toBe(0);
  });
});
