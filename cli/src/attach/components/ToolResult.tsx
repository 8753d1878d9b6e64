import { Box, Text } from 'ink';
import type { EventData } from '@svc/protocol';
import { firstLines } from '@svc/viewer';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `tool_result`: its first 3 lines, with ✓ or, for an error, ✗. */
export function ToolResult({ data, theme }: { data: EventData<'tool_result'>; theme: Theme }) {
  const { lines, more } = firstLines(visibleText(data.content));
  return (
    <Box flexDirection="column" marginLeft={2}>
      {lines.map((line, index) => (
        <Text key={index} color={data.is_error ? theme.danger : undefined} wrap="truncate-end">
          {index === 0 ? (data.is_error ? '✗ ' : '✓ ') : '  '}
          {line}
        </Text>
      ))}
      {more > 0 ? (
        <Text color={theme.muted} dimColor>
          {'  '}… {more} more line{more === 1 ? '' : 's'}
        </Text>
      ) : null}
    </Box>
  );
}
