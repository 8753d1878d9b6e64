import { Text } from 'ink';
import type { EventData } from '@svc/protocol';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `result`: how the turn ended, with an icon. */
export function ResultLine({ data, theme }: { data: EventData<'result'>; theme: Theme }) {
  const facts = [
    visibleText(data.subtype),
    ...(data.num_turns !== undefined ? [`${data.num_turns} turns`] : []),
    ...(data.duration_ms !== undefined ? [`${(data.duration_ms / 1000).toFixed(1)} s`] : []),
  ];
  return (
    <Text bold color={data.is_error ? theme.danger : theme.success}>
      {data.is_error ? '✖ turn failed' : '✔ turn complete'} ({facts.join(' · ')})
    </Text>
  );
}
