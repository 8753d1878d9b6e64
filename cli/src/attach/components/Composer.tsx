import { useState } from 'react';
import { Text, useInput } from 'ink';
import type { Theme } from '../theme.js';

/** Control characters a draft never holds: a pasted line break or tab becomes a space, the rest is dropped. */
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/g;

function typedText(input: string): string {
  return input.replace(/[\r\n\t]/g, ' ').replace(CONTROL_CHARACTERS, '');
}

/**
 * The message being written to the agent, one line: printable keys type (`y`, `n`, `q` are text
 * here), Backspace deletes, Enter sends (and leaves once the message is taken; a refused one stays
 * for another try), Esc leaves without sending. Mounted only while focused, so leaving drops the
 * draft.
 */
export function Composer({ theme, onSend, onLeave }: { theme: Theme; onSend(text: string): Promise<boolean>; onLeave(): void }) {
  const [draft, setDraft] = useState('');
  const [sending, setSending] = useState(false);

  useInput((input, key) => {
    if (sending) return;
    if (key.escape) {
      onLeave();
      return;
    }
    if (key.backspace || key.delete) {
      setDraft((text) => Array.from(text).slice(0, -1).join(''));
      return;
    }
    if (key.ctrl || key.meta) return;
    // Keys typed faster than they are read come as one chunk: its Enter is the last character.
    const entered = key.return || input.endsWith('\r');
    if (!entered) {
      setDraft((text) => text + typedText(input));
      return;
    }
    const text = draft + typedText(key.return ? '' : input.slice(0, -1));
    if (text.trim() === '') return;
    setDraft(text);
    setSending(true);
    // Taken, it leaves; refused or unsent (the notice says why), the draft stays for another try.
    void onSend(text).then((taken) => (taken ? onLeave() : setSending(false)));
  });

  return (
    <Text wrap="truncate-start">
      <Text color={theme.accent} bold>
        {sending ? 'sending ›' : 'message ›'}{' '}
      </Text>
      {draft}
      <Text inverse> </Text>
    </Text>
  );
}
