import { Box, Text } from 'ink';
import type { StoredEvent } from '@svc/protocol';
import { summarizeInput } from '@svc/viewer';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** `control_request`: the prompt `Allow [tool]? (y/n)`, with how many more wait behind it. */
export function PromptModal({ request, open, theme }: { request: StoredEvent<'control_request'>; open: number; theme: Theme }) {
  const { data } = request;
  return (
    <Box borderStyle="double" borderColor={theme.warning} flexDirection="column" paddingX={1}>
      <Text bold>
        Allow [{visibleText(data.tool_name)}]? (y/n)
        {open > 1 ? <Text color={theme.muted}> · 1 of {open} open</Text> : null}
      </Text>
      <Text wrap="truncate-end">{visibleText(summarizeInput(data.tool_name, data.input))}</Text>
      {data.description ? (
        <Text color={theme.muted} wrap="truncate-end">
          {visibleText(data.description)}
        </Text>
      ) : null}
    </Box>
  );
}
