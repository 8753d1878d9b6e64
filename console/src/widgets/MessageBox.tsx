import { useState, type FormEvent, type KeyboardEvent } from 'react';
import { apiPaths, MESSAGE_LIMITS, type PostInterruptResponseType, type PostMessageResponseType, type WorkerActivity } from '@svc/protocol';
import { formatCount } from '@svc/viewer';
import { ApiError } from '../api.js';
import { useConsole } from '../console-context.js';

/** The activities in which the agent has a turn running that a person can stop. */
const STOPPABLE_ACTIVITIES: ReadonlySet<WorkerActivity | undefined> = new Set<WorkerActivity>(['working', 'waiting_for_decision']);

/** A text being sent, and the id that makes a second try of it the same message. */
interface Attempt {
  text: string;
  clientMessageId: string;
}

/**
 * A conversation's message box, at the foot of the worker page: Enter sends, Shift+Enter starts a
 * new line; "Stop the turn" asks the agent to end its current turn (the worker goes on). A send
 * that fails keeps the text, and its `client_message_id` while the text is unchanged: a message
 * that reached the gateway but whose answer was lost is stored once when sent again.
 */
export function MessageBox({ workerId, activity }: { workerId: string; activity: WorkerActivity | undefined }) {
  const { api } = useConsole();
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);
  const [unsent, setUnsent] = useState<Attempt>();
  const [failure, setFailure] = useState<string>();

  const tooLong = text.length > MESSAGE_LIMITS.textChars;
  const sendable = !sending && !tooLong && text.trim() !== '';

  const send = () => {
    if (!sendable) return;
    const attempt: Attempt = unsent?.text === text ? unsent : { text, clientMessageId: crypto.randomUUID() };
    setUnsent(attempt);
    setSending(true);
    setFailure(undefined);
    api
      .request<PostMessageResponseType>('POST', apiPaths.messages(workerId), { text: attempt.text, client_message_id: attempt.clientMessageId })
      .then(() => {
        // The box is read-only while sending: what it holds is what was sent.
        setText('');
        setUnsent(undefined);
      })
      .catch((err: unknown) => setFailure(`Not sent: ${reasonOf(err)}`))
      .finally(() => setSending(false));
  };

  const stop = () => {
    setStopping(true);
    setFailure(undefined);
    api
      .request<PostInterruptResponseType>('POST', apiPaths.interrupt(workerId))
      .catch((err: unknown) => setFailure(`Not stopped: ${reasonOf(err)}`))
      .finally(() => setStopping(false));
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    // Not while an input method is composing a character: its Enter picks the character.
    if (event.key !== 'Enter' || event.shiftKey || event.nativeEvent.isComposing) return;
    event.preventDefault();
    send();
  };

  return (
    <form
      className="message-box"
      aria-label="Talk to the agent"
      onSubmit={(event: FormEvent) => {
        event.preventDefault();
        send();
      }}
    >
      <div className="message-head">
        <label htmlFor="message-text">Message to the agent</label>
        <span id="message-hint" className={tooLong ? 'error' : undefined}>
          {tooLong
            ? `${formatCount(text.length)} characters: a message holds at most ${formatCount(MESSAGE_LIMITS.textChars)}`
            : 'Enter sends, Shift+Enter starts a new line'}
        </span>
      </div>
      <div className="message-row">
        <textarea
          id="message-text"
          rows={2}
          value={text}
          readOnly={sending}
          aria-invalid={tooLong}
          aria-describedby="message-hint"
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
        />
        <div className="message-buttons">
          <button type="submit" className="primary" disabled={!sendable}>
            Send
          </button>
          <button type="button" onClick={stop} disabled={stopping || !STOPPABLE_ACTIVITIES.has(activity)}>
            Stop the turn
          </button>
        </div>
      </div>
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
    </form>
  );
}

/** Why a call failed, for the person: the gateway's own words, or that it could not be reached. */
function reasonOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  return `the gateway could not be reached (${err instanceof Error ? err.message : String(err)})`;
}
