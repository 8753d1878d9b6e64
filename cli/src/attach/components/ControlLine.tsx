import { Text } from 'ink';
import type { EventData } from '@svc/protocol';
import { deciderOf } from '@svc/viewer';
import { summarizeInput } from '@svc/viewer';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `control_request` in the history: what was asked. */
export function ControlRequestLine({ data, theme }: { data: EventData<'control_request'>; theme: Theme }) {
  return (
    <Text color={theme.warning} wrap="truncate-end">
      ? permission asked for [{visibleText(data.tool_name)}] {visibleText(summarizeInput(data.tool_name, data.input, 80))}
    </Text>
  );
}

/** `control_response` in the history: the decision and who made it (read from its source). */
export function ControlResponseLine({ data, source, theme }: { data: EventData<'control_response'>; source: string | undefined; theme: Theme }) {
  const allowed = data.decision === 'allow';
  return (
    <Text color={allowed ? theme.success : theme.danger} wrap="truncate-end">
      {allowed ? '✓ allowed' : '✗ denied'} by {visibleText(deciderOf(data, source))}
      {data.message && !allowed ? `: ${visibleText(data.message)}` : ''}
    </Text>
  );
}
