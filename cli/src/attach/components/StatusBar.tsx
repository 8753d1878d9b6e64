import { Box, Text } from 'ink';
import { activityText, type WorkerView } from '@svc/viewer';
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

/** The bottom line: the worker, the connection, tokens and cost, and the keys. */
export function StatusBar({ model, workerId, theme }: { model: WorkerView; workerId: string; theme: Theme }) {
  const keys = model.prompt() ? 'y allow · n deny · ↑↓ PgUp PgDn scroll · ctrl+d detach' : `↑↓ PgUp PgDn scroll · q quit · ctrl+d detach`;
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
