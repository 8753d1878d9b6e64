import { describe, expect, it } from 'vitest';
import type { EventData } from '@svc/protocol';
import type { AgentEvent } from './adapter.js';
import { createAcpPermissions } from './acp-permissions.js';
import { AcpToolCalls } from './acp-updates.js';

const OPTIONS = [
  { optionId: 'always', name: 'Always', kind: 'allow_always' as const },
  { optionId: 'once', name: 'Allow', kind: 'allow_once' as const },
  { optionId: 'no', name: 'Reject', kind: 'reject_once' as const },
];

function setUp() {
  const events: AgentEvent[] = [];
  const permissions = createAcpPermissions({ emit: (event) => events.push(event), calls: new AcpToolCalls(), runTag: 'run1' });
  const requests = () => events.filter((e): e is AgentEvent & { type: 'control_request' } => e.type === 'control_request').map((e) => e.data);
  return { events, permissions, requests };
}
const decision = (request: EventData<'control_request'>, extra: Partial<EventData<'control_response'>>): EventData<'control_response'> => ({
  request_id: request.request_id,
  decision: 'allow',
  decided_by: 'alice',
  ...extra,
});

describe('acp permission requests', () => {
  it("svc's own request ids (the agent's JSON-RPC ids repeat); allow → allow_once, never always; deny → reject_once, its tool_result at once", async () => {
    const { events, permissions, requests } = setUp();
    const first = permissions.ask({ sessionId: 's', toolCall: { toolCallId: 't1', kind: 'execute', title: 'npm test' }, options: OPTIONS });
    const second = permissions.ask({ sessionId: 's', toolCall: { toolCallId: 't2', kind: 'edit', locations: [{ path: '/w/a' }] }, options: OPTIONS });
    const [a, b] = requests();
    expect([a!.request_id, b!.request_id]).toEqual(['acp-run1-1', 'acp-run1-2']);
    expect(permissions.decide(decision(a!, { scope: 'always' }), a!)).toBe(true);
    expect(await first).toEqual({ outcome: { outcome: 'selected', optionId: 'once' } });
    expect(permissions.takeAllowedCommand('npm test')).toBe(true);
    expect(permissions.takeAllowedCommand('npm test')).toBe(false);
    expect(permissions.decide(decision(b!, { decision: 'deny', message: 'no' }), b!)).toBe(true);
    expect(await second).toEqual({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(events.filter((e) => e.type === 'tool_result').map((e) => e.data)).toEqual([{ tool_use_id: 't2', content: 'refused by alice: no', is_error: true }]);
    expect(permissions.decide(decision(b!, {}), b!)).toBe(false);
  });

  it('an allowance of a changed input is a refusal: an ACP agent takes none', async () => {
    const { permissions, requests } = setUp();
    const answer = permissions.ask({ sessionId: 's', toolCall: { toolCallId: 't1', kind: 'execute', title: 'rm -rf build' }, options: OPTIONS });
    const [request] = requests();
    permissions.decide(decision(request!, { updated_input: { command: 'rm -rf build/tmp' } }), request!);
    expect(await answer).toEqual({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(permissions.takeAllowedCommand('rm -rf build')).toBe(false);
  });

  it('a call whose command or files are too large to be decided is refused without asking anyone', async () => {
    const { events, permissions, requests } = setUp();
    const answer = permissions.ask({ sessionId: 's', toolCall: { toolCallId: 't1', kind: 'execute', title: 'x'.repeat(70_000) }, options: OPTIONS });
    expect(await answer).toEqual({ outcome: { outcome: 'selected', optionId: 'no' } });
    expect(requests()).toEqual([]);
    expect(events.find((e) => e.type === 'tool_result')?.data).toMatchObject({ is_error: true, content: expect.stringContaining('too large to be decided') });
  });
});
