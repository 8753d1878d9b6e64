import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { validateIncomingEvent, type EventData } from '@svc/protocol';
import type { AgentEvent } from './adapter.js';
import { createCodexAppServerAdapter } from './codex-app-server.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/codex');

interface TranscriptLine {
  dir: 'send' | 'recv' | 'note';
  msg: Record<string, unknown> | string;
}
const transcript = (name: string): TranscriptLine[] =>
  readFileSync(path.join(FIXTURES, name), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as TranscriptLine);

/**
 * Plays a real app-server transcript against the adapter: what Codex sent is parsed; what the
 * client sent after the handshake must be what the adapter writes (turn/start, the decision).
 */
function play(name: string, decision: 'allow' | 'deny', extra: Partial<EventData<'control_response'>> = {}) {
  const adapter = createCodexAppServerAdapter();
  const lines = transcript(name);
  const prompt = (lines.find((l) => typeof l.msg === 'object' && l.msg['method'] === 'turn/start')!.msg as { params: { input: Array<{ text: string }> } })
    .params.input[0]!.text;
  const plan = adapter.launch({ command: 'codex', args: [], prompt, autonomous: false });
  const written: string[] = [...plan.stdinLines];
  const events: AgentEvent[] = [];
  for (const line of lines) {
    if (line.dir !== 'recv' || typeof line.msg !== 'object') continue;
    for (const event of adapter.parseLine(JSON.stringify(line.msg), 'stdout')) {
      events.push(event);
      if (event.type === 'control_request') {
        const response: EventData<'control_response'> = {
          request_id: event.data.request_id,
          decision,
          decided_by: 'alice',
          ...(decision === 'deny' ? { message: 'no' } : {}),
          ...extra,
        };
        written.push(adapter.formatDecision(response, event.data).trimEnd());
      }
    }
    written.push(...adapter.takeOutgoing!().map((l) => l.trimEnd()));
  }
  const clientSent = lines.filter((l) => l.dir === 'send').map((l) => l.msg as Record<string, unknown>);
  return { plan, events, written: written.map((l) => JSON.parse(l) as Record<string, unknown>), clientSent };
}

describe('codex adapter (app-server, interactive) — the real transcripts', () => {
  for (const [name, decision] of [
    ['appserver-escalate-accept.jsonl', 'allow'],
    ['appserver-escalate-decline.jsonl', 'deny'],
  ] as const) {
    it(`${name}: the handshake, every line mapped, the approval as a control_request, the decision in Codex's shape`, () => {
      const { plan, events, written, clientSent } = play(name, decision);
      expect(plan.args).toEqual(['app-server']);
      // What the adapter writes is what the real client wrote (the same methods, ids and decisions).
      expect(written.map((m) => [m['method'] ?? 'response', m['id'] ?? null])).toEqual(clientSent.map((m) => [m['method'] ?? 'response', m['id'] ?? null]));
      const turnStart = written.find((m) => m['method'] === 'turn/start')!;
      expect(turnStart['params']).toEqual(clientSent.find((m) => m['method'] === 'turn/start')!['params']);
      expect(written.at(-1)).toEqual({ id: 0, result: { decision: decision === 'allow' ? 'accept' : 'decline' } });

      const types = events.map((e) => e.type);
      expect(types).toEqual([
        'system',
        'system',
        'system',
        'assistant',
        'assistant',
        'tool_use',
        'control_request',
        'tool_result',
        'progress',
        'assistant',
        'progress',
        'result',
      ]);
      for (const [n, event] of events.entries())
        expect(validateIncomingEvent({ ...event, uid: `b:${n}`, ts: '2026-11-22T09:00:00.000Z' }).ok, JSON.stringify(event)).toBe(true);
      expect(events.filter((e) => e.type === 'assistant').map((e) => (e.data as EventData<'assistant'>).kind)).toEqual(['thinking', 'text', 'text']);
      const request = events.find((e) => e.type === 'control_request')!.data as EventData<'control_request'>;
      expect(request).toMatchObject({
        tool_name: 'command_execution',
        input: { command: 'echo hello | tee out.txt' },
        tool_use_id: 'call_mock_1',
        description: 'Mock model wants to write out.txt outside the sandbox',
      });
      expect(request.request_id).toMatch(/^[0-9a-f-]{36}:0$/);
      const result = events.find((e) => e.type === 'tool_result')!.data as EventData<'tool_result'>;
      expect(result).toEqual(
        decision === 'allow'
          ? { tool_use_id: 'call_mock_1', content: 'hello\n', is_error: false }
          : { tool_use_id: 'call_mock_1', content: 'declined', is_error: true },
      );
      expect(events.at(-1)).toEqual({ type: 'result', data: { subtype: 'success', is_error: false, num_turns: 1 } });
    });
  }

  it("appserver-patch-readonly-accept.jsonl: a file change's request carries the item's changes, so file_change(<path>) rules can match them", () => {
    const { events, written } = play('appserver-patch-readonly-accept.jsonl', 'allow');
    const request = events.find((e) => e.type === 'control_request')!.data as EventData<'control_request'>;
    expect(request).toMatchObject({ tool_name: 'file_change', tool_use_id: 'call_mock_1' });
    expect(request.input['changes']).toEqual([
      { path: '/srv/codex-case/appserver-patch-readonly-accept/work/hello.txt', kind: { type: 'add' }, diff: 'hello from apply_patch\n' },
    ]);
    expect(written.at(-1)).toEqual({ id: 0, result: { decision: 'accept' } });
    expect(events.filter((e) => e.type === 'tool_result').map((e) => (e.data as EventData<'tool_result'>).is_error)).toEqual([false]);
  });

  it('decisions in Codex\'s words: "always" is acceptForSession, a deny with interrupt is cancel (the real client\'s answers in those transcripts)', () => {
    for (const [name, decision, extra, answer] of [
      ['appserver-escalate-acceptForSession-2turns.jsonl', 'allow', { scope: 'always' }, 'acceptForSession'],
      ['appserver-escalate-cancel.jsonl', 'deny', { interrupt: true }, 'cancel'],
    ] as const) {
      const { written, clientSent } = play(name, decision, extra);
      const decisionOf = (messages: Array<Record<string, unknown>>) =>
        messages.filter((m) => m['result'] !== undefined).map((m) => (m['result'] as { decision: string }).decision);
      expect(decisionOf(written)[0], name).toBe(answer);
      expect(decisionOf(clientSent)[0], name).toBe(answer);
    }
  });

  it("a refused attempt Codex reports no item for still shows: tool_use and an error tool_result, before the turn's result", () => {
    const adapter = createCodexAppServerAdapter();
    adapter.launch({ command: 'codex', args: [], prompt: 'x', autonomous: false });
    const [request] = adapter.parseLine(
      JSON.stringify({
        method: 'item/commandExecution/requestApproval',
        id: 7,
        params: { itemId: 'call_9', command: 'curl evil.example', reason: 'needs network' },
      }),
      'stdout',
    );
    const data = request!.data as EventData<'control_request'>;
    expect(JSON.parse(adapter.formatDecision({ request_id: data.request_id, decision: 'deny', message: 'no network', decided_by: 'alice' }, data))).toEqual({
      id: 7,
      result: { decision: 'decline' },
    });
    const events = adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { status: 'completed' } } }), 'stdout');
    expect(events).toEqual([
      { type: 'tool_use', data: { tool_use_id: 'call_9', name: 'command_execution', input: { command: 'curl evil.example' } } },
      { type: 'tool_result', data: { tool_use_id: 'call_9', content: 'declined by alice: no network', is_error: true } },
      { type: 'result', data: { subtype: 'success', is_error: false, num_turns: 1 } },
    ]);
  });

  it('a stream failure Codex retries is a warning, one it gives up on an error; a failed turn is a failed result', () => {
    const adapter = createCodexAppServerAdapter();
    const [retrying] = adapter.parseLine(JSON.stringify({ method: 'error', params: { error: { message: 'stream disconnected' }, willRetry: true } }), 'stdout');
    expect(retrying!.data).toMatchObject({ level: 'warn', message: 'stream disconnected', details: { will_retry: true } });
    const [final] = adapter.parseLine(JSON.stringify({ method: 'error', params: { error: { message: 'exceeded retry limit' }, willRetry: false } }), 'stdout');
    expect(final!.data).toMatchObject({ level: 'error', message: 'exceeded retry limit' });
    const [result] = adapter.parseLine(
      JSON.stringify({ method: 'turn/completed', params: { turn: { status: 'failed', error: { message: 'exceeded retry limit' } } } }),
      'stdout',
    );
    expect(result).toEqual({ type: 'result', data: { subtype: 'failed', is_error: true, num_turns: 1, text: 'exceeded retry limit' } });
  });

  it("token usage is the thread's total; junk and an unknown request are said, not dropped", () => {
    const adapter = createCodexAppServerAdapter();
    expect(
      adapter.parseLine(
        '{"method":"thread/tokenUsage/updated","params":{"tokenUsage":{"total":{"inputTokens":1001,"cachedInputTokens":200,"outputTokens":51}}}}',
        'stdout',
      ),
    ).toEqual([{ type: 'progress', data: { input_tokens: 1001, output_tokens: 51, cache_read_tokens: 200, cost_usd: 0 } }]);
    expect(adapter.parseLine('not json', 'stdout')[0]).toMatchObject({ type: 'system', data: { level: 'warn', subtype: 'unparsed_line' } });
    expect(adapter.parseLine('{"method":"item/tool/requestUserInput","id":7,"params":{}}', 'stdout')[0]).toMatchObject({
      type: 'system',
      data: { level: 'warn', subtype: 'unanswered_request' },
    });
    expect(adapter.parseLine('{"id":1,"error":{"message":"bad sandbox"}}', 'stdout')[0]).toMatchObject({
      type: 'system',
      data: { level: 'error', message: 'Codex refused request 1: bad sandbox' },
    });
  });

  it('thread/start asks for the sandbox the lists call for: read-only by default, workspace-write when every file change is approved and nothing limits commands', () => {
    const threadStart = (permissions?: { auto_approve: string[]; deny: string[]; ask: string[] }, autonomous = false) => {
      const plan = createCodexAppServerAdapter().launch({ command: 'codex', args: [], prompt: 'x', autonomous, permissions });
      return (JSON.parse(plan.stdinLines.find((line) => line.includes('thread/start'))!) as { params: unknown }).params;
    };
    expect(threadStart()).toEqual({ approvalPolicy: 'on-request', sandbox: 'read-only' });
    expect(threadStart({ auto_approve: ['file_change'], deny: [], ask: [] })).toEqual({ approvalPolicy: 'on-request', sandbox: 'workspace-write' });
    expect(threadStart({ auto_approve: ['file_change(*)'], deny: ['command_execution(rm *)'], ask: [] }, true)).toEqual({
      approvalPolicy: 'on-request',
      sandbox: 'read-only',
    });
  });

  it('at the end of a turn, a call Codex recorded in its rollout but made no item for (a command its sandbox refused) shows as tool_use and an error tool_result with the output the model saw', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-codex-rollout-'));
    try {
      const rollout = path.join(dir, 'rollout.jsonl');
      const record = (payload: Record<string, unknown>) => `${JSON.stringify({ timestamp: '2026-11-24T17:24:50.000Z', type: 'response_item', payload })}\n`;
      writeFileSync(
        rollout,
        record({ type: 'function_call', name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo hello > out.txt', login: false }), call_id: 'call_1' }) +
          record({
            type: 'function_call_output',
            call_id: 'call_1',
            output: 'Process exited with code 1\nOutput:\n/bin/bash: line 1: out.txt: Read-only file system\n',
          }) +
          record({ type: 'function_call', name: 'exec_command', arguments: JSON.stringify({ cmd: 'echo hi' }), call_id: 'call_2' }) +
          record({ type: 'function_call_output', call_id: 'call_2', output: 'Process exited with code 0\nOutput:\nhi\n' }),
      );
      const adapter = createCodexAppServerAdapter();
      adapter.launch({ command: 'codex', args: [], prompt: 'x', autonomous: false });
      adapter.parseLine(JSON.stringify({ id: 1, result: { thread: { id: 't1', path: rollout }, model: 'gpt-5.5' } }), 'stdout');
      // call_2 had its item: it is not repeated.
      adapter.parseLine(JSON.stringify({ method: 'item/started', params: { item: { type: 'commandExecution', id: 'call_2', command: 'echo hi' } } }), 'stdout');
      adapter.parseLine(
        JSON.stringify({
          method: 'item/completed',
          params: { item: { type: 'commandExecution', id: 'call_2', command: 'echo hi', aggregatedOutput: 'hi\n', exitCode: 0, status: 'completed' } },
        }),
        'stdout',
      );
      const events = adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { status: 'completed' } } }), 'stdout');
      expect(events).toEqual([
        { type: 'tool_use', data: { tool_use_id: 'call_1', name: 'command_execution', input: { command: 'echo hello > out.txt' } } },
        { type: 'tool_result', data: { tool_use_id: 'call_1', content: expect.stringContaining('Read-only file system'), is_error: true } },
        { type: 'result', data: { subtype: 'success', is_error: false, num_turns: 1 } },
      ]);
      // The next turn reads on from where this one stopped.
      writeFileSync(
        rollout,
        record({ type: 'custom_tool_call', name: 'apply_patch', input: '*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch\n', call_id: 'call_3' }) +
          record({ type: 'custom_tool_call_output', call_id: 'call_3', output: 'patch rejected by user' }),
        { flag: 'a' },
      );
      expect(adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { status: 'completed' } } }), 'stdout').slice(0, 2)).toEqual([
        { type: 'tool_use', data: { tool_use_id: 'call_3', name: 'file_change', input: { changes: [{ path: 'a.txt' }] } } },
        { type: 'tool_result', data: { tool_use_id: 'call_3', content: 'patch rejected by user', is_error: true } },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a cancelled turn (a denial with interrupt) is an interrupted result that says so', () => {
    const adapter = createCodexAppServerAdapter();
    expect(adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { status: 'interrupted' } } }), 'stdout')).toEqual([
      {
        type: 'result',
        data: { subtype: 'interrupted', is_error: false, num_turns: 1, text: "the turn was cancelled: a denial or a person's interrupt ended it" },
      },
    ]);
  });

  it("a person's message starts a turn when none runs and steers the one running; an interrupt ends the running turn (turn/interrupt of the schema)", () => {
    const adapter = createCodexAppServerAdapter();
    adapter.parseLine(JSON.stringify({ id: 1, result: { thread: { id: 'th_1' }, model: 'gpt' } }), 'stdout');
    adapter.takeOutgoing!();
    const sent = (line: string) => JSON.parse(line) as { method: string; id: number; params: Record<string, unknown> };
    const input = (text: string) => [{ type: 'text', text, text_elements: [] }];
    expect(sent(adapter.formatMessage!({ text: 'first' }))).toEqual({ method: 'turn/start', id: 100, params: { threadId: 'th_1', input: input('first') } });
    adapter.parseLine(JSON.stringify({ method: 'turn/started', params: { threadId: 'th_1', turn: { id: 'turn_1', status: 'inProgress' } } }), 'stdout');
    expect(sent(adapter.formatMessage!({ text: 'and also' }))).toEqual({
      method: 'turn/steer',
      id: 101,
      params: { threadId: 'th_1', expectedTurnId: 'turn_1', input: input('and also') },
    });
    expect(sent(adapter.formatInterrupt!())).toEqual({ method: 'turn/interrupt', id: 102, params: { threadId: 'th_1', turnId: 'turn_1' } });
    adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { id: 'turn_1', status: 'interrupted' } } }), 'stdout');
    // No turn runs: nothing to interrupt (the history says so), and a message starts the next turn.
    expect(adapter.formatInterrupt!()).toBe('');
    expect(sent(adapter.formatMessage!({ text: 'next' }))).toMatchObject({ method: 'turn/start', params: { threadId: 'th_1' } });
  });

  it("a person's message names itself to Codex (clientUserMessageId: its message_id), which keeps it in its rollout, starting a turn or steered", () => {
    const adapter = createCodexAppServerAdapter();
    adapter.parseLine(JSON.stringify({ id: 1, result: { thread: { id: 'th_1' }, model: 'gpt' } }), 'stdout');
    adapter.takeOutgoing!();
    const sent = (line: string) => (JSON.parse(line) as { params: Record<string, unknown> }).params;
    expect(sent(adapter.formatMessage!({ text: 'first', id: 'msg_1' }))).toMatchObject({ clientUserMessageId: 'msg_1' });
    adapter.parseLine(JSON.stringify({ method: 'turn/started', params: { threadId: 'th_1', turn: { id: 'turn_1', status: 'inProgress' } } }), 'stdout');
    expect(sent(adapter.formatMessage!({ text: 'and also', id: 'msg_2' }))).toMatchObject({ expectedTurnId: 'turn_1', clientUserMessageId: 'msg_2' });
    expect(adapter.tookMessage).toBeDefined();
    expect(adapter.forgetUnansweredMessage).toBeUndefined();
  });

  it('a message steered into a turn that ended as it came (Codex refuses the steer) is given again, as a turn of its own', () => {
    const adapter = createCodexAppServerAdapter();
    adapter.parseLine(JSON.stringify({ id: 1, result: { thread: { id: 'th_1' }, model: 'gpt' } }), 'stdout');
    adapter.takeOutgoing!();
    adapter.parseLine(JSON.stringify({ method: 'turn/started', params: { threadId: 'th_1', turn: { id: 'turn_1', status: 'inProgress' } } }), 'stdout');
    const steer = JSON.parse(adapter.formatMessage!({ text: 'one more thing', id: 'msg_late' })) as { method: string; id: number };
    expect(steer.method).toBe('turn/steer');
    adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { id: 'turn_1', status: 'completed' } } }), 'stdout');
    const events = adapter.parseLine(JSON.stringify({ id: steer.id, error: { code: -32600, message: 'no active turn to steer' } }), 'stdout');
    expect(events).toEqual([expect.objectContaining({ type: 'system', data: expect.objectContaining({ level: 'warn', subtype: 'agent_error' }) })]);
    const [again] = adapter.takeOutgoing!().map((line) => JSON.parse(line) as { method: string; params: Record<string, unknown> });
    expect(again).toMatchObject({
      method: 'turn/start',
      params: { threadId: 'th_1', input: [{ type: 'text', text: 'one more thing', text_elements: [] }], clientUserMessageId: 'msg_late' },
    });
  });

  it("a person's message with images: its text, then each image as an input item with a data URL (the schema's ImageUserInput), steered or starting a turn", () => {
    const adapter = createCodexAppServerAdapter();
    adapter.parseLine(JSON.stringify({ id: 1, result: { thread: { id: 'th_1' }, model: 'gpt' } }), 'stdout');
    adapter.takeOutgoing!();
    const images = [
      { media_type: 'image/png' as const, data: 'iVBORw0KGgo=' },
      { media_type: 'image/jpeg' as const, data: '/9j/' },
    ];
    const started = JSON.parse(adapter.formatMessage!({ text: 'compare these', images })) as { method: string; params: { input: unknown[] } };
    expect(started.method).toBe('turn/start');
    expect(started.params.input).toEqual([
      { type: 'text', text: 'compare these', text_elements: [] },
      { type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' },
      { type: 'image', url: 'data:image/jpeg;base64,/9j/' },
    ]);
    adapter.parseLine(JSON.stringify({ method: 'turn/started', params: { threadId: 'th_1', turn: { id: 'turn_1', status: 'inProgress' } } }), 'stdout');
    const steered = JSON.parse(adapter.formatMessage!({ text: '', images: images.slice(0, 1) })) as { method: string; params: { input: unknown[] } };
    expect([steered.method, steered.params.input]).toEqual(['turn/steer', [{ type: 'image', url: 'data:image/png;base64,iVBORw0KGgo=' }]]);
    expect(adapter.takesImages).toBe(true);
  });

  it('a resumed run: thread/resume of the kept thread; a message before the thread exists goes with its first turn, one while that turn starts is steered in once it has its id; a refused turn/start ends the turn', () => {
    const adapter = createCodexAppServerAdapter();
    const plan = adapter.launch({ command: 'codex', args: [], autonomous: false, resume: 'th_kept' });
    expect(JSON.parse(plan.stdinLines[2]!)).toMatchObject({ method: 'thread/resume', id: 1, params: { threadId: 'th_kept', excludeTurns: true } });
    const sent = (line: string) => JSON.parse(line) as { method: string; id: number; params: Record<string, unknown> };
    const input = (...texts: string[]) => texts.map((text) => ({ type: 'text', text, text_elements: [] }));
    expect(adapter.turns!.messageStartsTurn()).toBe(true);
    expect(adapter.formatMessage!({ text: 'are you back?' })).toBe('');
    expect(adapter.turns!.messageStartsTurn()).toBe(false);
    expect(adapter.formatMessage!({ text: 'and this' })).toBe('');
    adapter.parseLine(JSON.stringify({ id: 1, result: { thread: { id: 'th_kept' }, model: 'gpt' } }), 'stdout');
    expect(adapter.takeOutgoing!().map(sent)).toEqual([
      { method: 'turn/start', id: 2, params: { threadId: 'th_kept', input: input('are you back?', 'and this') } },
    ]);
    // Our turn/start is not yet started: a message now waits to be steered in.
    expect(adapter.formatMessage!({ text: 'one more' })).toBe('');
    adapter.parseLine(JSON.stringify({ method: 'turn/started', params: { threadId: 'th_kept', turn: { id: 'turn_9', status: 'inProgress' } } }), 'stdout');
    expect(adapter.takeOutgoing!().map(sent)).toEqual([
      { method: 'turn/steer', id: 100, params: { threadId: 'th_kept', expectedTurnId: 'turn_9', input: input('one more') } },
    ]);
    adapter.parseLine(JSON.stringify({ method: 'turn/completed', params: { turn: { id: 'turn_9', status: 'completed' } } }), 'stdout');
    const refused = sent(adapter.formatMessage!({ text: 'again' }));
    expect(refused).toMatchObject({ method: 'turn/start', id: 101 });
    const events = adapter.parseLine(JSON.stringify({ id: 101, error: { code: -32600, message: 'thread busy' } }), 'stdout');
    expect(events.map((event) => event.type)).toEqual(['system', 'result']);
    expect(events[1]!.data).toEqual({ subtype: 'error', is_error: true, text: 'Codex refused to start the turn: thread busy' });
    expect(adapter.turns!.messageStartsTurn()).toBe(true);
  });

  it("the preflight says which sandbox Codex runs with, and warns when Codex's own sandbox cannot start here", async () => {
    const adapter = createCodexAppServerAdapter();
    const launch = { command: 'false', args: [], prompt: 'x', autonomous: false };
    adapter.launch(launch);
    const broken = await adapter.preflight!(launch, { env: process.env });
    expect(broken.map((e) => (e.data as EventData<'system'>).subtype)).toEqual(['codex_settings', 'codex_sandbox_unavailable']);
    expect(broken[0]!.data).toMatchObject({ level: 'info', details: { sandbox: 'read-only', approval_policy: 'on-request' } });
    expect(broken[1]!.data).toMatchObject({ level: 'warn' });
    const working = await adapter.preflight!({ ...launch, command: 'true' }, { env: process.env });
    expect(working.map((e) => (e.data as EventData<'system'>).subtype)).toEqual(['codex_settings']);
  });
});
