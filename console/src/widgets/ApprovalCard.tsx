import { useEffect, useState } from 'react';
import { apiPaths, DEFAULT_DECISION_POLICY, type DecisionPolicy, type StoredEvent } from '@svc/protocol';
import { deciderOf, summarizeInput, type Closing } from '@svc/viewer';
import { ApiError } from '../api.js';
import { useConsole } from '../console-context.js';

/**
 * One open request, decidable: Allow, Deny (with a message for the agent), Always allow (the
 * rule it adds is shown before it is saved). A decision someone else made first is explained
 * (`already_decided`), and the buttons stay disabled.
 */
export function ApprovalCard({
  workerId,
  request,
  policy = DEFAULT_DECISION_POLICY,
  closing,
  onDecided,
}: {
  workerId: string;
  request: StoredEvent<'control_request'>;
  /** The worker's deadline policy (its record's `decision_policy`). */
  policy?: DecisionPolicy | undefined;
  /** How the request was closed, once it has been (here or elsewhere): the buttons are then disabled and say so. */
  closing?: Closing | undefined;
  onDecided?: () => void;
}) {
  const { api } = useConsole();
  const { request_id: requestId, tool_name: tool, input, description } = request.data;
  const [mode, setMode] = useState<'choose' | 'deny' | 'always'>('choose');
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  /** How this card's own decision ended: taken, or refused because the request was closed first. */
  const [outcome, setOutcome] = useState<string>();
  /** A decision that failed for another reason (the gateway away, say): the buttons stay, to try again. */
  const [failure, setFailure] = useState<string>();

  const decide = (decision: 'allow' | 'deny', extra: Record<string, unknown> = {}) => {
    setBusy(true);
    setFailure(undefined);
    api
      .request('POST', apiPaths.control(workerId), { request_id: requestId, decision, ...extra })
      .then(() => {
        setOutcome(decision === 'allow' ? 'Allowed' : 'Denied');
        onDecided?.();
      })
      .catch((err: unknown) => {
        if (err instanceof ApiError && (err.code === 'already_decided' || err.code === 'request_closed')) setOutcome(err.message);
        else {
          setFailure(`Not decided: ${err instanceof Error ? err.message : String(err)}`);
          setBusy(false);
        }
      });
  };

  const decidable = !outcome && !closing;
  // y / n decide the first open card on the page, as in `svc attach`.
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (busy || !decidable || mode !== 'choose' || event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
      const first = document.querySelector('[data-approval]');
      if (first?.getAttribute('data-approval') !== requestId) return;
      if (event.key === 'y') decide('allow');
      if (event.key === 'n') setMode('deny');
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  const summary = summarizeInput(tool, input);
  return (
    <article className="approval" data-approval={decidable ? requestId : undefined} aria-label={`${tool} asks: ${summary}`}>
      <header>
        <span className="tag">{tool}</span> <code>{summary}</code>
        <Countdown since={request.ts} policy={policy} />
      </header>
      {description && <p>{description}</p>}
      <details>
        <summary>Input</summary>
        <pre>{JSON.stringify(input, null, 2)}</pre>
      </details>
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
      {!decidable ? (
        <>
          {outcome && (
            <p role="status" className="outcome">
              {outcome}
            </p>
          )}
          {closing && (
            <p role="status" className="closed">
              {closing.decision
                ? `${closing.decision.decision === 'allow' ? 'Allowed' : 'Denied'}: decided by ${deciderOf(closing.decision, closing.source)}${closing.decision.message ? ` — ${closing.decision.message}` : ''}`
                : 'Withdrawn by the agent'}
            </p>
          )}
          <div className="buttons">
            <button type="button" className="primary" disabled>
              Allow
            </button>
            <button type="button" className="danger" disabled>
              Deny…
            </button>
          </div>
        </>
      ) : mode === 'deny' ? (
        <form
          onSubmit={(event) => {
            event.preventDefault();
            decide('deny', message.trim() ? { message } : {});
          }}
        >
          <label>
            Why (the agent reads this)
            <input autoFocus value={message} onChange={(event) => setMessage(event.target.value)} />
          </label>
          <div className="buttons">
            <button type="submit" className="danger" disabled={busy}>
              Deny
            </button>
            <button type="button" onClick={() => setMode('choose')} disabled={busy}>
              Back
            </button>
          </div>
        </form>
      ) : mode === 'always' ? (
        <div>
          <p>
            Saves a rule: <strong>always allow {tool}</strong> for this worker, whatever its input. Later requests for {tool} are not asked.
          </p>
          <div className="buttons">
            <button type="button" className="primary" onClick={() => decide('allow', { scope: 'always' })} disabled={busy}>
              Save rule and allow
            </button>
            <button type="button" onClick={() => setMode('choose')} disabled={busy}>
              Back
            </button>
          </div>
        </div>
      ) : (
        <div className="buttons">
          <button type="button" className="primary" onClick={() => decide('allow')} disabled={busy} aria-keyshortcuts="y">
            Allow
          </button>
          <button type="button" className="danger" onClick={() => setMode('deny')} disabled={busy} aria-keyshortcuts="n">
            Deny…
          </button>
          <button type="button" onClick={() => setMode('always')} disabled={busy}>
            Always allow…
          </button>
        </div>
      )}
    </article>
  );
}

/** The time left before the worker's policy decides by itself (`on_timeout`), counting down. */
function Countdown({ since, policy }: { since: string; policy: DecisionPolicy }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const left = Math.max(0, Math.round((Date.parse(since) + policy.decision_timeout_s * 1000 - now) / 1000));
  const clock = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
  return (
    <span className="deadline" role="timer" aria-label={`${policy.on_timeout === 'deny' ? 'denied' : 'allowed'} by the policy in ${clock}`}>
      {left > 0
        ? `${policy.on_timeout === 'deny' ? 'denied' : 'allowed'} in ${clock}`
        : `the policy ${policy.on_timeout === 'deny' ? 'denies' : 'allows'} it now`}
    </span>
  );
}
