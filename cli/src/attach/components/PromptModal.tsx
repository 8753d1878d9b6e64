import { Box, Text } from 'ink';
import type { StoredEvent } from '@svc/protocol';
import { summarizeInput } from '@svc/viewer';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';

/** The most of a request's input the prompt shows; the rest is counted, never silently cut. */
const PROMPT_INPUT_CHARS = 4000;

/**
 * `control_request`: the prompt `Allow [tool]? (y/n)`, with how many more wait behind it. The
 * input is shown whole, wrapped: what a person allows must be on screen to its end (a command
 * whose tail hides behind spaces or past the width is the same attack as one that hides it with
 * an escape).
 */
export function PromptModal({ request, open, theme }: { request: StoredEvent<'control_request'>; open: number; theme: Theme }) {
  const { data } = request;
  return (
    <Box borderStyle="double" borderColor={theme.warning} flexDirection="column" paddingX={1}>
      <Text bold>
        Allow [{visibleText(data.tool_name)}]? (y/n)
        {open > 1 ? <Text color={theme.muted}> · 1 of {open} open</Text> : null}
      </Text>
      <Text wrap="wrap">{visibleText(summarizeInput(data.tool_name, data.input, PROMPT_INPUT_CHARS))}</Text>
      {data.description ? (
        <Text color={theme.muted} wrap="truncate-end">
          {visibleText(data.description)}
        </Text>
      ) : null}
    </Box>
  );
}
