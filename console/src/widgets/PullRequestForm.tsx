import { useId, useState, type FormEvent } from 'react';
import { apiPaths, type PullRequestBodyType, type PullRequestRecord } from '@svc/protocol';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { webLink } from '../workspace-changes.js';

/**
 * Opens a pull request of the pushed work branch (`POST …/changes/pull-request`): "Open pull
 * request…" opens the form: a title, a description, the branch to merge into (the repository's
 * default when empty). Once there is one, made here or elsewhere, its link takes the button's place.
 */
export function PullRequestForm({ workerId, existing }: { workerId: string; existing: PullRequestRecord | undefined }) {
  const { api } = useConsole();
  const formId = useId();
  const [editing, setEditing] = useState(false);
  const [title, setTitle] = useState('');
  const [body, setBody] = useState('');
  const [base, setBase] = useState('');
  const [sending, setSending] = useState(false);
  const [failure, setFailure] = useState<string>();
  const [made, setMade] = useState<PullRequestRecord>();
  const pullRequest = made ?? existing;

  if (pullRequest) return <PullRequestLink pullRequest={pullRequest} />;

  const open = (event: FormEvent) => {
    event.preventDefault();
    if (title.trim() === '') return setFailure('A pull request needs a title.');
    setSending(true);
    setFailure(undefined);
    const request: PullRequestBodyType = { title: title.trim(), ...(body.trim() ? { body } : {}), ...(base.trim() ? { base: base.trim() } : {}) };
    api
      .request<PullRequestRecord>('POST', apiPaths.pullRequest(workerId), request)
      .then(setMade)
      .catch((err: unknown) => setFailure(`No pull request: ${reasonOf(err)}`))
      .finally(() => setSending(false));
  };

  return (
    <div className="changes-action">
      <div className="changes-action-row">
        <button type="button" aria-expanded={editing} aria-controls={formId} onClick={() => setEditing(!editing)}>
          Open pull request…
        </button>
      </div>
      {editing && (
        <form id={formId} className="changes-form" aria-label="Open a pull request" onSubmit={open}>
          <label>
            Title
            <input value={title} readOnly={sending} required maxLength={256} onChange={(event) => setTitle(event.target.value)} />
          </label>
          <label>
            Description (optional)
            <textarea value={body} readOnly={sending} rows={3} onChange={(event) => setBody(event.target.value)} />
          </label>
          <label>
            Into branch (optional)
            <input
              value={base}
              readOnly={sending}
              maxLength={255}
              pattern="[A-Za-z0-9._\/\-]+"
              title="Letters, digits and . _ / - only"
              placeholder="the repository's default"
              onChange={(event) => setBase(event.target.value)}
            />
          </label>
          <button type="submit" className="primary" disabled={sending}>
            {sending ? 'Opening…' : 'Open pull request'}
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

/** A pull request made of the changes: its link (a web page only), its title, its branches and who opened it. */
function PullRequestLink({ pullRequest }: { pullRequest: PullRequestRecord }) {
  const href = webLink(pullRequest.url);
  const name = `Pull request #${pullRequest.number}`;
  return (
    <div className="changes-action">
      <p role="status" className="outcome">
        {href ? (
          <a href={href} target="_blank" rel="noopener noreferrer">
            {name}: {pullRequest.title}
          </a>
        ) : (
          `${name}: ${pullRequest.title} (${pullRequest.url})`
        )}{' '}
        <span className="since">
          (<code>{pullRequest.head}</code> into <code>{pullRequest.base}</code>, opened by {pullRequest.by})
        </span>
      </p>
    </div>
  );
}
