import { useId, useState, type FormEvent } from 'react';
import { apiPaths, type PushChangesBodyType, type PushRecord } from '@svc/protocol';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { shortCommit } from '../workspace-changes.js';

/** The later of two records by their `at` (a push made here, or one the changes report made elsewhere). */
const later = <T extends { at: string }>(a: T | undefined, b: T | undefined): T | undefined =>
  a && b ? (Date.parse(a.at) >= Date.parse(b.at) ? a : b) : (a ?? b);

/**
 * Pushes the workspace's changes (`POST …/changes/push`): "Push…" opens the form, to the branch
 * in its field (the work branch at first), with the commit message given for what is not
 * committed yet. The last push, made here or elsewhere, is said beside the button.
 */
export function PushForm({ workerId, branch, pushed }: { workerId: string; branch: string; pushed: PushRecord | undefined }) {
  const { api } = useConsole();
  const formId = useId();
  const [editing, setEditing] = useState(false);
  const [target, setTarget] = useState(branch);
  const [message, setMessage] = useState('');
  const [sending, setSending] = useState(false);
  const [failure, setFailure] = useState<string>();
  const [made, setMade] = useState<PushRecord>();
  const last = later(made, pushed);

  const push = (event: FormEvent) => {
    event.preventDefault();
    setSending(true);
    setFailure(undefined);
    const body: PushChangesBodyType = { ...(target.trim() ? { branch: target.trim() } : {}), ...(message.trim() ? { message: message.trim() } : {}) };
    api
      .request<PushRecord>('POST', apiPaths.changesPush(workerId), body)
      .then((record) => {
        setMade(record);
        setMessage('');
        setEditing(false);
      })
      .catch((err: unknown) => setFailure(`Not pushed: ${reasonOf(err)}`))
      .finally(() => setSending(false));
  };

  return (
    <div className="changes-action">
      <div className="changes-action-row">
        <button type="button" aria-expanded={editing} aria-controls={formId} onClick={() => setEditing(!editing)}>
          Push…
        </button>
        <p role="status" className="outcome">
          {last && (
            <>
              Pushed <code>{shortCommit(last.commit)}</code> to <code>{last.branch}</code> by {last.by}, {formatAge(last.at)} ago
            </>
          )}
        </p>
      </div>
      {editing && (
        <form id={formId} className="changes-form" aria-label="Push the changes" onSubmit={push}>
          <label>
            Branch
            <input
              value={target}
              readOnly={sending}
              required
              maxLength={255}
              pattern="[A-Za-z0-9._\/\-]+"
              title="Letters, digits and . _ / - only"
              onChange={(event) => setTarget(event.target.value)}
            />
          </label>
          <label>
            Commit message (optional)
            <input value={message} readOnly={sending} placeholder="for what is not committed yet" onChange={(event) => setMessage(event.target.value)} />
          </label>
          <button type="submit" className="primary" disabled={sending}>
            {sending ? 'Pushing…' : 'Push'}
          </button>
        </form>
      )}
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
    </div>
  );
}
