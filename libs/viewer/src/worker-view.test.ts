import { describe, expect, it } from 'vitest';
import { eventFactory } from '@svc/test-support';
import { WorkerView } from './worker-view.js';

describe('the worker view', () => {
  it('applies events once, in id order: a repeat (after a reconnect) is ignored', () => {
    const view = new WorkerView({ readOnly: false });
    const event = eventFactory();
    const first = event('assistant', { text: 'a' });
    const second = event('assistant', { text: 'b' });
    expect(view.apply(first)).toBe(true);
    expect(view.apply(second)).toBe(true);
    expect(view.apply(first)).toBe(false);
    expect(view.events.map((e) => e.id)).toEqual(['1', '2']);
    expect(view.lastId).toBe('2');
  });

  it('open requests queue in arrival order; a decision or a withdrawal closes one', () => {
    const view = new WorkerView({ readOnly: false });
    const event = eventFactory();
    view.apply(event('control_request', { request_id: 'r1', tool_name: 'A', input: {} }));
    view.apply(event('control_request', { request_id: 'r2', tool_name: 'B', input: {} }));
    expect(view.prompt()?.data.request_id).toBe('r1');
    expect(view.openCount()).toBe(2);
    expect(view.openRequests().map((request) => request.data.request_id)).toEqual(['r1', 'r2']);
    view.apply(event('system', { level: 'info', message: 'withdrawn', subtype: 'control_withdrawn', details: { request_id: 'r1' } }));
    expect(view.prompt()?.data.request_id).toBe('r2');
    expect(view.notices.at(-1)?.text).toBe('request r1 withdrawn by the agent');
    view.apply(event('control_response', { request_id: 'r2', decision: 'deny', decided_by: 'policy:timeout', message: 'late' }, 'policy'));
    expect(view.prompt()).toBeUndefined();
    expect(view.notices.at(-1)?.text).toBe('denied: decided by the timeout policy');
    expect(view.closingOf('r1')).toEqual({ withdrawn: true });
    expect(view.closingOf('r2')?.decision).toMatchObject({ decision: 'deny', decided_by: 'policy:timeout' });
    expect(view.closingOf('r3')).toBeUndefined();
  });

  it('a request repeated under the same id neither replaces what the person is shown nor reopens a closed one', () => {
    const view = new WorkerView({ readOnly: false });
    const event = eventFactory();
    view.apply(event('control_request', { request_id: 'r1', tool_name: 'network', input: { target: 'github.com:443' } }));
    // The agent posts an innocent-looking request under the same id: the decision would apply to the first.
    view.apply(event('control_request', { request_id: 'r1', tool_name: 'Read', input: { file_path: 'README.md' } }));
    expect(view.openRequests().map((request) => request.data.tool_name)).toEqual(['network']);
    expect(view.prompt()?.data.tool_name).toBe('network');
    view.apply(event('control_response', { request_id: 'r1', decision: 'deny', decided_by: 'alice' }, 'user:console:alice'));
    view.apply(event('control_request', { request_id: 'r1', tool_name: 'Read', input: { file_path: 'README.md' } }));
    expect(view.openRequests()).toEqual([]);
  });

  it('a decision made here closes the prompt at once, without a "decided by" notice when its event arrives', () => {
    const view = new WorkerView({ readOnly: false });
    const event = eventFactory();
    view.apply(event('control_request', { request_id: 'r1', tool_name: 'A', input: {} }));
    view.decided('r1');
    expect(view.prompt()).toBeUndefined();
    view.apply(event('control_response', { request_id: 'r1', decision: 'allow', decided_by: 'me' }));
    expect(view.notices).toEqual([]);
  });

  it("keeps the latest progress and result, and the agent's exit; read-only hides prompts", () => {
    const view = new WorkerView({ readOnly: false });
    const event = eventFactory();
    view.apply(event('progress', { input_tokens: 1, output_tokens: 2, cost_usd: 0.1 }));
    view.apply(event('progress', { input_tokens: 10, output_tokens: 20, cost_usd: 0.2 }));
    view.apply(event('result', { subtype: 'success', is_error: false }));
    view.apply(event('control_request', { request_id: 'r1', tool_name: 'A', input: {} }));
    view.apply(event('system', { level: 'info', message: 'exit', subtype: 'agent_exit', details: { code: 0 } }));
    expect(view.progress?.input_tokens).toBe(10);
    expect(view.result?.subtype).toBe('success');
    expect(view.agentExit).toBe(0);
    view.setReadOnly('the worker is completed');
    expect(view.prompt()).toBeUndefined();
    expect(view.notices.at(-1)?.text).toBe('read-only: the worker is completed');
  });

  it('scrolls within the history', () => {
    const view = new WorkerView({ readOnly: false });
    const event = eventFactory();
    for (let i = 0; i < 5; i++) view.apply(event('assistant', { text: String(i) }));
    view.scrollBy(100);
    expect(view.scroll).toBe(4);
    view.scrollBy(-100);
    expect(view.scroll).toBe(0);
  });
});
