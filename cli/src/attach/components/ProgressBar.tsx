import { Text } from 'ink';
import type { EventData } from '@svc/protocol';
import { formatCost, formatCount } from '@svc/viewer';
import type { Theme } from '../theme.js';

/** `progress`: tokens and cost so far, in the status bar. */
export function ProgressBar({ data, theme }: { data: EventData<'progress'> | undefined; theme: Theme }) {
  if (!data) return <Text color={theme.muted}>no usage yet</Text>;
  return (
    <Text color={theme.accent}>
      tokens in {formatCount(data.input_tokens)} · out {formatCount(data.output_tokens)}
      {data.cache_read_tokens ? ` · cached ${formatCount(data.cache_read_tokens)}` : ''} · {formatCost(data.cost_usd)}
    </Text>
  );
}
