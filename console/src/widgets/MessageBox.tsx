import { useRef, useState, type ClipboardEvent, type FormEvent, type KeyboardEvent } from 'react';
import {
  apiPaths,
  MESSAGE_IMAGE_TYPES,
  MESSAGE_LIMITS,
  type PostInterruptResponseType,
  type PostMessageBodyType,
  type PostMessageResponseType,
  type WorkerActivity,
} from '@svc/protocol';
import { formatCount } from '@svc/viewer';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { readAttachments, type AttachedImage } from '../message-images.js';
import { AttachedImages } from './AttachedImages.js';

/** The activities in which the agent has a turn running that a person can stop. */
const STOPPABLE_ACTIVITIES: ReadonlySet<WorkerActivity | undefined> = new Set<WorkerActivity>(['working', 'waiting_for_decision']);

/** A message being sent, and the id that makes a second try of it the same message. */
interface Attempt {
  text: string;
  images: readonly AttachedImage[];
  clientMessageId: string;
}

/** Whether the box holds what `attempt` sent: then sending it again is a retry of the same message. */
const holds = (attempt: Attempt | undefined, text: string, images: readonly AttachedImage[]): attempt is Attempt =>
  attempt !== undefined && attempt.text === text && attempt.images.length === images.length && attempt.images.every((image, i) => image.id === images[i]!.id);

/** The request body of an attempt; `images` only when there are some (the API wants at least one there). */
const messageBody = ({ text, images, clientMessageId }: Attempt): PostMessageBodyType => ({
  text,
  ...(images.length === 0 ? {} : { images: images.map((image) => ({ media_type: image.mediaType, data: image.data })) }),
  client_message_id: clientMessageId,
});

/**
 * A conversation's message box, at the foot of the worker page: Enter sends, Shift+Enter starts a
 * new line; "Stop the turn" asks the agent to end its current turn (the worker goes on). Images
 * come by paste or by the picker, checked against the gateway's limits before anything is sent.
 * A send that fails keeps the text and the images, and its `client_message_id` while they are
 * unchanged: a message that reached the gateway but whose answer was lost is stored once when
 * sent again.
 */
export function MessageBox({ workerId, activity }: { workerId: string; activity: WorkerActivity | undefined }) {
  const { api } = useConsole();
  const [text, setText] = useState('');
  const [images, setImages] = useState<readonly AttachedImage[]>([]);
  const [attaching, setAttaching] = useState(false);
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);
  const [unsent, setUnsent] = useState<Attempt>();
  const [failure, setFailure] = useState<string>();
  const picker = useRef<HTMLInputElement>(null);

  const tooLong = text.length > MESSAGE_LIMITS.textChars;
  const sendable = !sending && !attaching && !tooLong && (text.trim() !== '' || images.length > 0);

  const attach = (files: readonly File[]) => {
    if (sending || files.length === 0) return;
    setAttaching(true);
    setFailure(undefined);
    readAttachments(files, images.length)
      .then((read) => {
        // Two attachments at once each counted the images before the other's were in: the limit holds all the same.
        setImages((attached) => [...attached, ...read.images].slice(0, MESSAGE_LIMITS.images));
        if (read.refusals.length > 0) setFailure(`Not attached: ${read.refusals.join('; ')}`);
      })
      .catch((err: unknown) => setFailure(`Not attached: the file could not be read (${err instanceof Error ? err.message : String(err)})`))
      .finally(() => setAttaching(false));
  };

  const onPaste = (event: ClipboardEvent<HTMLTextAreaElement>) => {
    // A clipboard with text is a text paste: an office document puts a picture of its text beside it.
    if (event.clipboardData.types.includes('text/plain')) return;
    const files = [...event.clipboardData.files];
    if (files.length === 0) return;
    event.preventDefault();
    attach(files);
  };

  const send = () => {
    if (!sendable) return;
    const attempt: Attempt = holds(unsent, text, images) ? unsent : { text, images, clientMessageId: crypto.randomUUID() };
    setUnsent(attempt);
    setSending(true);
    setFailure(undefined);
    api
      .request<PostMessageResponseType>('POST', apiPaths.messages(workerId), messageBody(attempt))
      .then(() => {
        // The box is read-only while sending: what it holds is what was sent.
        setText('');
        setImages([]);
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
      {images.length > 0 && <AttachedImages images={images} disabled={sending} onRemove={(id) => setImages(images.filter((image) => image.id !== id))} />}
      <div className="message-row">
        <button type="button" className="attach" aria-label="Attach images" title="Attach images" disabled={sending} onClick={() => picker.current?.click()}>
          <PaperclipIcon />
        </button>
        <input
          ref={picker}
          type="file"
          accept={MESSAGE_IMAGE_TYPES.join(',')}
          multiple
          hidden
          onChange={(event) => {
            attach([...(event.target.files ?? [])]);
            // The same file picked again is another change.
            event.target.value = '';
          }}
        />
        <textarea
          id="message-text"
          rows={2}
          value={text}
          readOnly={sending}
          aria-invalid={tooLong}
          aria-describedby="message-hint"
          onChange={(event) => setText(event.target.value)}
          onKeyDown={onKeyDown}
          onPaste={onPaste}
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

function PaperclipIcon() {
  return (
    <svg
      aria-hidden="true"
      viewBox="0 0 24 24"
      width="22"
      height="22"
      fill="none"
      stroke="currentColor"
      strokeWidth="2"
      strokeLinecap="round"
      strokeLinejoin="round"
    >
      <path d="M21.4 11.1l-9.2 9.2a6 6 0 0 1-8.5-8.5l9.2-9.2a4 4 0 0 1 5.7 5.7l-9.2 9.2a2 2 0 0 1-2.8-2.8l8.5-8.5" />
    </svg>
  );
}
