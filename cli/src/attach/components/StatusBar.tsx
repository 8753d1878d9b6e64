import { Box, Text } from 'ink';
import { activityText, type WorkerView } from '@svc/viewer';
import { CONVERSATION_KEYS } from '../conversation-keys.js';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';
import { ProgressBar } from './ProgressBar.js';

function connectionText(model: WorkerView): string {
  const state = model.connection;
  switch (state.kind) {
    case 'connecting':
      return 'connecting…';
    case 'replaying':
      return `replaying… ${model.events.length.toLocaleString('en-US')} events`;
    case 'live':
      return `live · ${model.events.length.toLocaleString('en-US')} events`;
    case 'reconnecting':
      return `reconnecting in ${Math.ceil(state.inMs / 1000)} s (attempt ${state.attempt}): ${state.reason}`;
    case 'offline':
      return 'offline: waiting for the network';
    case 'closed':
      return `disconnected: ${state.reason}`;
  }
}

/** Whether the person can talk to the agent (a conversation not read-only), and is writing to it now. */
export type ConversationState = 'none' | 'ready' | 'composing';

/** The keys that work now: the composer takes every printable key, a prompt takes y and n instead of q. */
function keyHints(prompt: boolean, conversation: ConversationState): string {
  if (conversation === 'composing') return 'enter send · esc cancel · ↑↓ PgUp PgDn scroll · ctrl+d detach';
  const talk = conversation === 'ready' ? ` · ${CONVERSATION_KEYS.compose} message · ${CONVERSATION_KEYS.interrupt} interrupt` : '';
  return prompt ? `y allow · n deny${talk} · ↑↓ PgUp PgDn scroll · ctrl+d detach` : `↑↓ PgUp PgDn scroll${talk} · q quit · ctrl+d detach`;
}

/** The bottom line: the worker, the connection, the agent's activity, tokens and cost, and the keys. */
export function StatusBar({
  model,
  workerId,
  theme,
  conversation = 'none',
}: {
  model: WorkerView;
  workerId: string;
  theme: Theme;
  conversation?: ConversationState;
}) {
  const keys = keyHints(model.prompt() !== undefined, conversation);
  return (
    <Box flexDirection="column">
      <Box justifyContent="space-between">
        <Text wrap="truncate-end">
          <Text bold>{visibleText(workerId)}</Text>
          {model.readOnly ? <Text color={theme.warning}> [read-only]</Text> : null}
          {model.scroll > 0 ? <Text color={theme.muted}> [scrolled up {model.scroll}]</Text> : null}
          {model.activity && !model.readOnly ? (
            <Text color={model.activity === 'working' ? theme.muted : theme.warning}> {activityText(model.activity)}</Text>
          ) : null}{' '}
          <Text color={model.connection.kind === 'live' ? theme.success : theme.warning}>{visibleText(connectionText(model))}</Text>
        </Text>
        <ProgressBar data={model.progress} theme={theme} />
      </Box>
      <Text color={theme.muted} dimColor>
        {keys}
      </Text>
    </Box>
  );
}
