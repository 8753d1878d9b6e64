import { Box, Text } from 'ink';
import type { EventData } from '@svc/protocol';
import { summarizeInput } from '@svc/viewer';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `tool_use`: a bordered card `[tool_name] input_summary`. */
export function ToolUseCard({ data, theme }: { data: EventData<'tool_use'>; theme: Theme }) {
  return (
    <Box borderStyle="round" borderColor={theme.accent} paddingX={1}>
      <Text wrap="truncate-end">
        <Text bold color={theme.accent}>
          [{visibleText(data.name)}]
        </Text>{' '}
        {visibleText(summarizeInput(data.name, data.input))}
      </Text>
    </Box>
  );
}
