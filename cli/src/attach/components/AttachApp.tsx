import { useState } from 'react';
import { Box, Text, useApp, useInput } from 'ink';
import type { StoredEvent } from '@svc/protocol';
import type { WorkerView } from '@svc/viewer';
import { CONVERSATION_KEYS } from '../conversation-keys.js';
import type { Theme } from '../theme.js';
import { visibleText } from '../visible-text.js';
import { useWorkerView } from '@svc/viewer/react';
import { useTerminalSize } from '../use-terminal-size.js';
import { Composer } from './Composer.js';
import { EventRow, rowsOf } from './EventRow.js';
import { PromptModal } from './PromptModal.js';
import { StatusBar } from './StatusBar.js';

export type ExitReason = 'detached' | 'quit';

/** What a person can say to a conversation's agent (the caller reports a refusal as a notice). */
export interface ConversationActions {
  /** Resolves true once the message is taken (false: refused or unsent; the draft stays for another try). */
  send(text: string): Promise<boolean>;
  interrupt(): void;
}

export interface AttachAppProps {
  model: WorkerView;
  workerId: string;
  theme: Theme;
  /** Sends a decision on the open request (the model is told by the caller). */
  decide(requestId: string, decision: 'allow' | 'deny'): void;
  /** Given for a worker in `conversation` mode: the composer and the interrupt key. */
  conversation?: ConversationActions | undefined;
  onExit(reason: ExitReason): void;
}

/** The events that fit above the prompt and the status bar, bottom-anchored, `scroll` events up. */
function visibleEvents(events: readonly StoredEvent[], scroll: number, rows: number, width: number): StoredEvent[] {
  const shown: StoredEvent[] = [];
  let used = 0;
  for (let index = events.length - 1 - scroll; index >= 0; index--) {
    const event = events[index]!;
    const height = rowsOf(event, width);
    if (used + height > rows && shown.length > 0) break;
    shown.push(event);
    used += height;
  }
  return shown.reverse();
}

/**
 * `svc attach`: the history (only what fits on screen is rendered), notices, the open prompt,
 * the composer, and the status bar. Keys: y/n decide, ↑/↓/PgUp/PgDn scroll, q quits when no
 * prompt is shown, ctrl+c / ctrl+d detach (the worker keeps running); for a conversation, m
 * opens the composer (where every printable key is text) and x interrupts the turn.
 */
export function AttachApp({ model, workerId, theme, decide, conversation, onExit }: AttachAppProps) {
  useWorkerView(model);
  const { exit } = useApp();
  const { rows, columns } = useTerminalSize();
  const [composerOpen, setComposerOpen] = useState(false);
  const prompt = model.prompt();
  const page = Math.max(1, rows - 8);
  // A worker that ends while a message is written takes no more: the composer goes with it.
  const talk = model.readOnly ? undefined : conversation;
  const composing = talk !== undefined && composerOpen;

  useInput((input, key) => {
    if (key.ctrl && (input === 'c' || input === 'd')) {
      onExit('detached');
      exit();
      return;
    }
    if (key.upArrow) model.scrollBy(1);
    else if (key.downArrow) model.scrollBy(-1);
    else if (key.pageUp) model.scrollBy(page);
    else if (key.pageDown) model.scrollBy(-page);
    // The composer takes every other key.
    if (composing) return;
    if (talk && input === CONVERSATION_KEYS.compose) {
      setComposerOpen(true);
      return;
    }
    if (talk && input === CONVERSATION_KEYS.interrupt) {
      talk.interrupt();
      return;
    }
    if (prompt && (input === 'y' || input === 'n')) {
      decide(prompt.data.request_id, input === 'y' ? 'allow' : 'deny');
      return;
    }
    if (input === 'q' && !prompt) {
      onExit('quit');
      exit();
    }
  });

  const reserved = 3 + (prompt ? 5 : 0) + (composing ? 1 : 0) + model.notices.length;
  const history = visibleEvents(model.events, model.scroll, Math.max(1, rows - reserved), columns);
  return (
    <Box flexDirection="column">
      <Box flexDirection="column">
        {history.map((event) => (
          <EventRow key={event.id} event={event} theme={theme} />
        ))}
      </Box>
      {model.notices.map((notice, index) => (
        <Text key={index} color={notice.level === 'error' ? theme.danger : notice.level === 'warn' ? theme.warning : theme.accent}>
          » {visibleText(notice.text)}
        </Text>
      ))}
      {prompt ? <PromptModal request={prompt} open={model.openCount()} theme={theme} /> : null}
      {composing ? <Composer theme={theme} onSend={(text) => talk.send(text)} onLeave={() => setComposerOpen(false)} /> : null}
      <StatusBar model={model} workerId={workerId} theme={theme} conversation={talk === undefined ? 'none' : composing ? 'composing' : 'ready'} />
    </Box>
  );
}
