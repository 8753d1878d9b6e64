import type { EventData, StoredEvent } from '@svc/protocol';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';
import { AssistantText } from './AssistantText.js';
import { ControlRequestLine, ControlResponseLine } from './ControlLine.js';
import { ProgressBar } from './ProgressBar.js';
import { ResultLine } from './ResultLine.js';
import { SystemLine } from './SystemLine.js';
import { ToolResult } from './ToolResult.js';
import { ToolUseCard } from './ToolUseCard.js';

/** One stored event in the history, by its type (SPEC "Renderer"). */
export function EventRow({ event, theme }: { event: StoredEvent; theme: Theme }) {
  switch (event.type) {
    case 'assistant':
      return <AssistantText data={event.data as EventData<'assistant'>} theme={theme} />;
    case 'tool_use':
      return <ToolUseCard data={event.data as EventData<'tool_use'>} theme={theme} />;
    case 'tool_result':
      return <ToolResult data={event.data as EventData<'tool_result'>} theme={theme} />;
    case 'result':
      return <ResultLine data={event.data as EventData<'result'>} theme={theme} />;
    case 'progress':
      return <ProgressBar data={event.data as EventData<'progress'>} theme={theme} />;
    case 'system':
      return <SystemLine data={event.data as EventData<'system'>} theme={theme} />;
    case 'control_request':
      return <ControlRequestLine data={event.data as EventData<'control_request'>} theme={theme} />;
    case 'control_response':
      return <ControlResponseLine data={event.data as EventData<'control_response'>} source={event.source} theme={theme} />;
  }
}

/** Rows an event takes on screen (a guess good enough to fill the view without overflowing it). */
export function rowsOf(event: StoredEvent, width: number): number {
  switch (event.type) {
    case 'tool_use':
      return 3;
    case 'tool_result': {
      const lines = (event.data as EventData<'tool_result'>).content.replace(/\n+$/, '').split('\n').length;
      return Math.min(lines, 3) + (lines > 3 ? 1 : 0);
    }
    case 'assistant':
      // Measured as shown: an escaped control character takes four columns.
      return visibleText((event.data as EventData<'assistant'>).text)
        .split('\n')
        .reduce((rows, line) => rows + Math.max(1, Math.ceil(line.length / Math.max(20, width))), 0);
    default:
      return 1;
  }
}
