import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { createTheme } from '../theme.js';
import { eventFactory } from '@svc/test-support';
import { AssistantText } from './AssistantText.js';
import { ControlRequestLine, ControlResponseLine } from './ControlLine.js';
import { EventRow } from './EventRow.js';
import { ProgressBar } from './ProgressBar.js';
import { PromptModal } from './PromptModal.js';
import { ResultLine } from './ResultLine.js';
import { SystemLine } from './SystemLine.js';
import { ToolResult } from './ToolResult.js';
import { ToolUseCard } from './ToolUseCard.js';

const theme = createTheme(false);
const event = eventFactory();

describe('attach widgets, one per event type', () => {
  it('assistant: the text; thinking is marked', () => {
    expect(render(<AssistantText data={{ text: 'I will look at the tests.' }} theme={theme} />).lastFrame()).toBe('I will look at the tests.');
    expect(render(<AssistantText data={{ text: 'hmm', kind: 'thinking' }} theme={theme} />).lastFrame()).toBe('✻ hmm');
  });

  it('tool_use: a bordered card [tool_name] input_summary', () => {
    const frame = render(
      <ToolUseCard data={{ tool_use_id: 't1', name: 'Bash', input: { command: 'npm test', description: 'run the tests' } }} theme={theme} />,
    ).lastFrame()!;
    const lines = frame.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^╭─+╮$/);
    expect(lines[1]).toMatch(/^│ \[Bash\] npm test +│$/);
    expect(lines[2]).toMatch(/^╰─+╯$/);
    expect(
      render(<ToolUseCard data={{ tool_use_id: 't2', name: 'Write', input: { file_path: '/workspace/a.txt', content: 'x' } }} theme={theme} />).lastFrame(),
    ).toContain('[Write] /workspace/a.txt');
    expect(
      render(<ToolUseCard data={{ tool_use_id: 't3', name: 'mcp__github__create_issue', input: { title: 'Bug' } }} theme={theme} />).lastFrame(),
    ).toContain('[mcp__github__create_issue] {"title":"Bug"}');
  });

  it('tool_result: the first 3 lines, how many more, and an error indicator', () => {
    const ok = render(<ToolResult data={{ tool_use_id: 't1', content: 'one\ntwo\nthree\nfour\nfive\n', is_error: false }} theme={theme} />).lastFrame()!;
    expect(ok.split('\n')).toEqual(['  ✓ one', '    two', '    three', '    … 2 more lines']);
    const failed = render(<ToolResult data={{ tool_use_id: 't1', content: 'permission denied', is_error: true }} theme={theme} />).lastFrame()!;
    expect(failed).toBe('  ✗ permission denied');
  });

  it('result: the final status with an icon', () => {
    expect(render(<ResultLine data={{ subtype: 'success', is_error: false, num_turns: 3, duration_ms: 4200 }} theme={theme} />).lastFrame()).toBe(
      '✔ turn complete (success · 3 turns · 4.2 s)',
    );
    expect(render(<ResultLine data={{ subtype: 'error_max_turns', is_error: true }} theme={theme} />).lastFrame()).toBe('✖ turn failed (error_max_turns)');
  });

  it('progress: tokens and cost', () => {
    expect(
      render(<ProgressBar data={{ input_tokens: 13389, output_tokens: 48, cache_read_tokens: 1000, cost_usd: 0.108424 }} theme={theme} />).lastFrame(),
    ).toBe('tokens in 13,389 · out 48 · cached 1,000 · $0.1084');
    expect(render(<ProgressBar data={undefined} theme={theme} />).lastFrame()).toBe('no usage yet');
  });

  it('system: a dimmed line, its level named unless info', () => {
    expect(render(<SystemLine data={{ level: 'info', message: 'agent started' }} theme={theme} />).lastFrame()).toBe('· agent started');
    expect(render(<SystemLine data={{ level: 'warn', message: 'unparsed line' }} theme={theme} />).lastFrame()).toBe('· warn: unparsed line');
    // With colours, levels are told apart by colour too.
    const coloured = render(<SystemLine data={{ level: 'error', message: 'boom' }} theme={createTheme(true)} />).lastFrame()!;
    expect(coloured).toContain('boom');
  });

  it('control_request: the modal "Allow [tool]? (y/n)" with the open count; and its line in the history', () => {
    const request = event('control_request', {
      request_id: 'r1',
      tool_name: 'Write',
      input: { file_path: '/workspace/hello.txt' },
      description: 'Write hello.txt',
    });
    const modal = render(<PromptModal request={request} open={3} theme={theme} />).lastFrame()!;
    expect(modal).toContain('Allow [Write]? (y/n) · 1 of 3 open');
    expect(modal).toContain('/workspace/hello.txt');
    expect(modal).toContain('Write hello.txt');
    expect(render(<PromptModal request={request} open={1} theme={theme} />).lastFrame()).not.toContain('open');
    expect(render(<ControlRequestLine data={request.data} theme={theme} />).lastFrame()).toBe('? permission asked for [Write] /workspace/hello.txt');
  });

  it('control_response: the decision and who made it', () => {
    expect(
      render(
        <ControlResponseLine data={{ request_id: 'r1', decision: 'allow', decided_by: 'alice-sub', decided_by_name: 'Alice' }} theme={theme} />,
      ).lastFrame(),
    ).toBe('✓ allowed by Alice');
    expect(
      render(
        <ControlResponseLine data={{ request_id: 'r1', decision: 'deny', decided_by: 'policy:timeout', message: 'nobody answered' }} theme={theme} />,
      ).lastFrame(),
    ).toBe('✗ denied by the timeout policy: nobody answered');
  });

  it('EventRow picks the widget by type', () => {
    expect(render(<EventRow event={event('assistant', { text: 'hi' })} theme={theme} />).lastFrame()).toBe('hi');
    expect(render(<EventRow event={event('system', { level: 'info', message: 'x' })} theme={theme} />).lastFrame()).toBe('· x');
  });
});
