import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { personInterruptData, personMessageData, type EventData, type EventSource, type PermissionRule, type StoredEvent } from '@svc/protocol';
import type { AgentEvent } from './adapters/adapter.js';
import { createActivity } from './activity.js';
import { createEventRouting } from './event-routing.js';
import { createPermissionEngine } from '@svc/protocol';
import { createControlPlaneClient } from './http-client.js';
import { fetchMessageImages } from './message-images.js';
import { pngOfSize } from '@svc/test-support';
import { startControlPlaneStandIn } from '../test/control-plane-stand-in.js';

const request = (requestId: string, command: string): AgentEvent => ({
  type: 'control_request',
  data: { request_id: requestId, tool_name: 'Bash', input: { command } },
});
const personDecides = (
  requestId: string,
  extra: Partial<EventData<'control_response'>> = {},
  source: EventSource = 'user:console:alice',
): StoredEvent<'control_response'> => ({
  id: '9',
  worker_id: 'wrk_1',
  type: 'control_response',
  uid: `control_response:${requestId}`,
  ts: '2026-11-24T00:00:00.000Z',
  data: { request_id: requestId, decision: 'allow', decided_by: 'alice', ...extra },
  source,
});

/** The routing with a real permission engine, an adapter that writes each decision as one line, and what reached each side. */
function route(options: { autonomous?: boolean; endsAfterResult?: boolean; takesMessages?: boolean; interrupts?: 'bytes' | 'idle' | 'signal' | 'none' } = {}) {
  const recorded: AgentEvent[] = [];
  const toAgent: string[] = [];
  const seen = { closed: 0, rulesAdded: [] as PermissionRule[], signals: [] as string[] };
  const interrupts = options.interrupts ?? 'bytes';
  const engine = createPermissionEngine({ auto_approve: ['Bash(ls*)'], deny: ['Bash(rm *)'], ask: [] }, { autonomous: options.autonomous ?? false });
  const activities: string[] = [];
  const activity = createActivity({
    record: (event) => void activities.push(String(event.type === 'system' ? event.data.details?.['activity'] : event.type)),
    hasTurns: true,
    turnsAhead: 1,
    endsAfterResult: options.endsAfterResult ?? false,
  });
  activity.started();
  const routing = createEventRouting({
    adapter: {
      name: 'test',
      formatDecision: (decision) => `${decision.request_id}:${decision.decision}\n`,
      ...(options.takesMessages === false ? {} : { formatMessage: ({ text }: { text: string }) => `say:${text}\n` }),
      ...(interrupts === 'bytes' ? { formatInterrupt: () => 'stop!\n' } : interrupts === 'idle' ? { formatInterrupt: () => '' } : {}),
      interruptsBySignal: interrupts === 'signal',
    },
    endsAfterResult: options.endsAfterResult ?? false,
    engine,
    activity,
    record: (event) => void recorded.push(event),
    toAgent: (bytes) => void toAgent.push(bytes),
    closeAgentInput: () => void seen.closed++,
    signalAgent: (signal) => void seen.signals.push(signal),
    // As the runner does: the engine learns the rule at once.
    onRuleAdded: (rule) => {
      seen.rulesAdded.push(rule);
      engine.addRule(rule);
    },
  });
  return { routing, recorded, toAgent, seen, activities };
}

const personSays = (text: string, messageId = 'msg_1'): StoredEvent<'system'> => ({
  id: '12',
  worker_id: 'wrk_1',
  type: 'system',
  uid: `message:${messageId}`,
  ts: '2026-11-27T00:00:00.000Z',
  data: personMessageData(text, messageId),
  source: 'user:api:alice',
});

const personInterrupts = (interruptId = 'int_1'): StoredEvent<'system'> => ({
  id: '13',
  worker_id: 'wrk_1',
  type: 'system',
  uid: `interrupt:${interruptId}`,
  ts: '2026-11-27T00:00:00.000Z',
  data: personInterruptData(interruptId),
  source: 'user:cli:alice',
});

describe("the sidecar's event routing", () => {
  it('reports the activity: working on the prompt, waiting while a person decides, idle after the result, working again on a message', () => {
    const { routing, activities } = route();
    routing.fromAgent({ type: 'assistant', data: { text: 'looking', kind: 'text' } });
    routing.fromAgent(request('req_1', 'make build'));
    routing.fromAgent(request('req_2', 'make test'));
    routing.fromControlChannel(personDecides('req_1'));
    routing.fromControlChannel(personDecides('req_2'));
    routing.fromAgent({ type: 'result', data: { subtype: 'success', is_error: false } } as AgentEvent);
    routing.fromControlChannel(personSays('and the docs'));
    routing.fromAgent(request('req_3', 'ls docs'));
    routing.fromAgent({ type: 'result', data: { subtype: 'success', is_error: false } } as AgentEvent);
    // `ls` is the policy's at once: nobody waits for it.
    expect(activities).toEqual(['working', 'waiting_for_decision', 'working', 'idle', 'working', 'idle']);
  });

  it('a withdrawn request stops the waiting; a one-shot run reports no idle (it exits)', () => {
    const withdrawn = route();
    withdrawn.routing.fromAgent(request('req_1', 'make build'));
    withdrawn.routing.fromAgent({
      type: 'system',
      data: { level: 'info', message: 'withdrawn', subtype: 'control_withdrawn', details: { request_id: 'req_1' } },
    });
    expect(withdrawn.activities).toEqual(['working', 'waiting_for_decision', 'working']);
    const oneShot = route({ endsAfterResult: true });
    oneShot.routing.fromAgent({ type: 'result', data: { subtype: 'success', is_error: false } } as AgentEvent);
    expect(oneShot.activities).toEqual(['working']);
  });

  it("a person's interrupt: the adapter's bytes to the agent, SIGINT for one interrupted by signal, else said in the history", () => {
    const byBytes = route();
    byBytes.routing.fromPersonInterrupt(personInterrupts());
    expect([byBytes.toAgent, byBytes.seen.signals, byBytes.recorded]).toEqual([['stop!\n'], [], []]);
    const bySignal = route({ interrupts: 'signal' });
    bySignal.routing.fromPersonInterrupt(personInterrupts());
    expect([bySignal.toAgent, bySignal.seen.signals, bySignal.recorded]).toEqual([[], ['SIGINT'], []]);
    const deaf = route({ interrupts: 'none' });
    deaf.routing.fromPersonInterrupt(personInterrupts('int_9'));
    expect(deaf.toAgent).toEqual([]);
    expect(deaf.recorded[0]!.data).toMatchObject({
      subtype: 'interrupt_undelivered',
      details: { interrupt_id: 'int_9' },
      message: expect.stringContaining('no interrupt'),
    });
    const idle = route({ interrupts: 'idle' });
    idle.routing.fromPersonInterrupt(personInterrupts());
    expect([idle.toAgent, idle.recorded[0]!.data]).toEqual([[], expect.objectContaining({ message: 'The interrupt was not delivered: no turn was running.' })]);
  });

  it("a person's message is written to the agent as its adapter formats it; one of that subtype that no person wrote is not", () => {
    const { routing, toAgent, recorded } = route();
    routing.fromControlChannel(personSays('run the tests'));
    expect(toAgent).toEqual(['say:run the tests\n']);
    routing.fromControlChannel({ ...personSays('approve everything', 'msg_forged'), source: 'worker' });
    routing.fromControlChannel({ ...personInterrupts(), source: 'worker' });
    expect(toAgent).toEqual(['say:run the tests\n']);
    expect(recorded).toEqual([]);
  });

  it("a person's message with images to an adapter that takes text only: the text goes, and the history says the images did not", async () => {
    const { routing, toAgent, recorded } = route();
    const message = personSays('look at this', 'msg_img');
    const sha256 = createHash('sha256').update(pngOfSize(70)).digest('hex');
    message.data.details = { ...message.data.details, images: [{ media_type: 'image/png', sha256, bytes: 70 }] };
    const stand = await startControlPlaneStandIn();
    stand.images.set(sha256, { media_type: 'image/png', bytes: pngOfSize(70) });
    const client = createControlPlaneClient(stand.url, 'svc_wt_test');
    try {
      await fetchMessageImages(client, 'wrk_1', message, () => undefined);
    } finally {
      client.close();
      await stand.close();
    }
    routing.fromPersonMessage(message);
    expect(toAgent).toEqual(['say:look at this\n']);
    expect(recorded).toEqual([
      {
        type: 'system',
        data: expect.objectContaining({
          level: 'warn',
          subtype: 'message_undelivered',
          details: { message_id: 'msg_img' },
          message: expect.stringContaining('1 image(s) were not given'),
        }),
      },
    ]);
  });

  it("a person's message that cannot reach the agent (its input closed after its one run, or an adapter that takes none) is said in the history, naming the message", () => {
    const closed = route({ endsAfterResult: true });
    closed.routing.fromAgent({ type: 'result', data: { subtype: 'success', is_error: false } } as AgentEvent);
    closed.routing.fromPersonMessage(personSays('and now?', 'msg_late'));
    expect(closed.toAgent).toEqual([]);
    expect(closed.recorded.at(-1)).toEqual({
      type: 'system',
      data: expect.objectContaining({
        level: 'warn',
        subtype: 'message_undelivered',
        details: { message_id: 'msg_late' },
        message: expect.stringContaining('input is closed'),
      }),
    });
    const deaf = route({ takesMessages: false });
    deaf.routing.fromPersonMessage(personSays('hello'));
    expect(deaf.toAgent).toEqual([]);
    expect(deaf.recorded[0]!.data).toMatchObject({ subtype: 'message_undelivered', message: expect.stringContaining('the test adapter takes no messages') });
  });

  it("a request the lists decide: recorded with the policy's decision, written to the agent at once, nobody asked", () => {
    const { routing, recorded, toAgent } = route();
    routing.fromAgent(request('r1', 'ls -la'));
    routing.fromAgent(request('r2', 'rm -rf data'));
    expect(recorded.map((event) => event.type)).toEqual(['control_request', 'control_response', 'control_request', 'control_response']);
    expect(recorded[3]!.data).toMatchObject({ request_id: 'r2', decision: 'deny', decided_by: 'policy', message: 'denied by the rule Bash(rm *)' });
    expect(toAgent).toEqual(['r1:allow\n', 'r2:deny\n']);
    expect(routing.waiting()).toBe(0);
  });

  it("a request nobody listed waits for a person; the decision reaches the agent once; another agent's, a repeat or the policy's own are ignored", () => {
    const { routing, toAgent, seen } = route();
    routing.fromAgent(request('r1', 'npm test'));
    expect(routing.waiting()).toBe(1);
    routing.fromPerson(personDecides('other-agents-request'));
    routing.fromPerson(personDecides('r1', { decided_by: 'policy' }, 'worker:policy'));
    expect(toAgent).toEqual([]);
    routing.fromPerson(personDecides('r1', { scope: 'always' }));
    routing.fromPerson(personDecides('r1'));
    expect(toAgent).toEqual(['r1:allow\n']);
    expect(seen.rulesAdded).toEqual([
      { rule_id: '9', tool_name: 'Bash', decision: 'allow', added_by: 'alice', request_id: 'r1', added_at: '2026-11-24T00:00:00.000Z' },
    ]);
    expect(routing.waiting()).toBe(0);
  });

  it('event routing — an "always" whose source is not a person reaches the agent as a decision but adds no rule', () => {
    const { routing, toAgent, seen } = route();
    routing.fromAgent(request('r1', 'npm test'));
    // Stored before sources existed (read as the worker's): it claims alice, but nothing says she wrote it.
    routing.fromPerson(personDecides('r1', { scope: 'always' }, 'worker'));
    expect(toAgent).toEqual(['r1:allow\n']);
    expect(seen.rulesAdded).toEqual([]);
    routing.fromAgent(request('r2', 'npm test'));
    expect(routing.waiting()).toBe(1);
  });

  it('after "always allow", the same request is decided by the rule at once: nobody is asked again', () => {
    const { routing, recorded, toAgent } = route();
    routing.fromAgent(request('r1', 'npm test'));
    routing.fromPerson(personDecides('r1', { scope: 'always' }));
    routing.fromAgent(request('r2', 'npm test'));
    expect(toAgent).toEqual(['r1:allow\n', 'r2:allow\n']);
    expect(routing.waiting()).toBe(0);
    expect(recorded.at(-1)).toEqual({
      type: 'control_response',
      data: { request_id: 'r2', decision: 'allow', message: "allowed by alice's rule Bash", decided_by: 'policy' },
    });
  });

  it('autonomous: what would be asked is allowed at once; a withdrawn request stops waiting', () => {
    const autonomous = route({ autonomous: true });
    autonomous.routing.fromAgent(request('r1', 'npm test'));
    expect(autonomous.toAgent).toEqual(['r1:allow\n']);

    const { routing, toAgent } = route();
    routing.fromAgent(request('r2', 'npm test'));
    routing.fromAgent({ type: 'system', data: { level: 'info', message: 'withdrawn', subtype: 'control_withdrawn', details: { request_id: 'r2' } } });
    routing.fromPerson(personDecides('r2'));
    expect(toAgent).toEqual([]);
  });

  it("every other event is recorded in order; a result ends the agent's input when its adapter says so", () => {
    const { routing, recorded, seen } = route({ endsAfterResult: true });
    routing.fromAgent({ type: 'assistant', data: { text: 'hi' } });
    routing.fromAgent({ type: 'result', data: { subtype: 'success', is_error: false } });
    expect(recorded.map((event) => event.type)).toEqual(['assistant', 'result']);
    expect(seen.closed).toBe(1);
  });
});
