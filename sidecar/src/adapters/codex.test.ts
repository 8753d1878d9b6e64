import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { validateIncomingEvent } from '@svc/protocol';
import { createCodexExecAdapter } from './codex.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../test/fixtures/codex');
const parseAll = (name: string) => {
  const adapter = createCodexExecAdapter();
  return readFileSync(path.join(FIXTURES, name), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .flatMap((line) => adapter.parseLine(line, 'stdout'));
};

/** The event types each real `codex exec --json` transcript must produce (checked by hand against them). */
const EXPECTED: Record<string, string[]> = {
  'exec-workspace-write.jsonl': ['system', 'system', 'assistant', 'assistant', 'tool_use', 'tool_result', 'assistant', 'result', 'progress'],
  'exec-readonly-default.jsonl': ['system', 'system', 'assistant', 'assistant', 'assistant', 'result', 'progress'],
};

describe('codex adapter (exec) — the real transcripts', () => {
  for (const [name, types] of Object.entries(EXPECTED)) {
    it(`${name}: every line mapped, the expected sequence, every event valid v1`, () => {
      const events = parseAll(name);
      expect(events.map((e) => e.type)).toEqual(types);
      for (const [n, event] of events.entries()) expect(validateIncomingEvent({ ...event, uid: `b:${n}`, ts: '2026-11-22T09:00:00.000Z' }).ok, JSON.stringify(event)).toBe(true);
    });
  }

  it('a command is a tool_use when it starts and a tool_result with its output when it completes; reasoning is thinking', () => {
    const events = parseAll('exec-workspace-write.jsonl');
    expect(events.find((e) => e.type === 'tool_use')!.data).toEqual({ tool_use_id: 'item_2', name: 'command_execution', input: { command: "/bin/bash -c 'echo hello | tee out.txt'" } });
    expect(events.find((e) => e.type === 'tool_result')!.data).toEqual({ tool_use_id: 'item_2', content: 'hello\n', is_error: false });
    expect(events.find((e) => e.type === 'assistant')!.data).toEqual({ text: 'Planning to run a shell command.', kind: 'thinking' });
    expect(events.find((e) => e.type === 'progress')!.data).toEqual({ input_tokens: 2003, output_tokens: 103, cache_read_tokens: 400, cost_usd: 0 });
  });

  it('progress is cumulative over turns; a failed turn is a failed result; junk is a warn system event', () => {
    const adapter = createCodexExecAdapter();
    const usage = '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":1,"output_tokens":5}}';
    adapter.parseLine(usage, 'stdout');
    expect(adapter.parseLine(usage, 'stdout')[1]!.data).toEqual({ input_tokens: 20, output_tokens: 10, cache_read_tokens: 2, cost_usd: 0 });
    expect(adapter.parseLine('{"type":"turn.failed","error":{"message":"rate limited"}}', 'stdout')[0]!.data).toEqual({ subtype: 'error', is_error: true, num_turns: 3, text: 'rate limited' });
    expect(adapter.parseLine('garbage', 'stdout')[0]).toMatchObject({ type: 'system', data: { level: 'warn', message: 'garbage', subtype: 'unparsed_line' } });
  });

  it('runs exec with the prompt as its last argument and closes stdin; exec is for autonomous workers only', () => {
    const adapter = createCodexExecAdapter();
    expect(adapter.launch({ command: 'codex', args: ['--sandbox', 'workspace-write'], prompt: 'Create out.txt', autonomous: true })).toEqual({
      command: 'codex',
      args: ['exec', '--json', '--skip-git-repo-check', '--sandbox', 'workspace-write', 'Create out.txt'],
      stdinLines: [],
      closeStdin: true,
    });
    expect(() => adapter.launch({ command: 'codex', args: [], autonomous: false })).toThrow(/interactive worker runs under codex app-server/);
  });
});
