import { Text } from 'ink';
import type { EventData } from '@svc/protocol';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `assistant`: the agent's text as it arrives (thinking dimmed). */
export function AssistantText({ data, theme }: { data: EventData<'assistant'>; theme: Theme }) {
  if (data.kind === 'thinking') {
    return (
      <Text color={theme.muted} dimColor italic>
        ✻ {visibleText(data.text)}
      </Text>
    );
  }
  return <Text>{visibleText(data.text)}</Text>;
}
