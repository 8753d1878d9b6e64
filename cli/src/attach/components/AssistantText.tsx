import { Text } from 'ink';
import type { EventData } from '@svc/protocol';
import type { Theme } from '../theme.js';

/** `assistant`: the agent's text as it arrives (thinking dimmed). */
export function AssistantText({ data, theme }: { data: EventData<'assistant'>; theme: Theme }) {
  if (data.kind === 'thinking') {
    return (
      <Text color={theme.muted} dimColor italic>
        ✻ {data.text}
      </Text>
    );
  }
  return <Text>{data.text}</Text>;
}
