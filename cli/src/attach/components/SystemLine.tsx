import { Text } from 'ink';
import type { EventData } from '@svc/protocol';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `system`: a dimmed line coloured by its level. */
export function SystemLine({ data, theme }: { data: EventData<'system'>; theme: Theme }) {
  const colour = data.level === 'error' ? theme.danger : data.level === 'warn' ? theme.warning : theme.muted;
  return (
    <Text color={colour} dimColor wrap="truncate-end">
      · {data.level !== 'info' ? `${data.level}: ` : ''}
      {visibleText(data.message)}
    </Text>
  );
}
