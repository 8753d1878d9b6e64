import { useEffect, useState } from 'react';
import { DEFAULT_DECISION_POLICY, type DecisionPolicy, type StoredEvent } from '@svc/protocol';
import { deciderOf, summarizeInput, type Closing } from '@svc/viewer';
import { useConsole } from '../console-context.js';
import { decideRequest, decisionResultText, stillDecidable, type DecisionResult } from '../decide-request.js';
import { RouteNote, type RouteShown } from './RouteNote.js';

type Mode = 'choose' | 'deny' | 'always';

/**
 * One open request, decidable: Allow, Deny (with a message for the agent), Always allow (the
 * rule it adds is shown before it is saved). A routed request says to whom and by which rule. How
 * a decision ended is said in place (`decisionResultText`): taken; a vote toward a quorum (the
 * card stays open: the others may still allow, anyone may deny); refused because the request was
 * closed first (`already_decided`, the buttons then disabled) or is not this person's to decide
 * (`403 not_a_decider`, `role_required`); or failed, to try again.
 */
export function ApprovalCard({
  workerId,
  request,
  policy,
  deadline,
  route,
  closing,
  result: given,
  held = false,
  onDecided,
  onResult,
}: {
  workerId: string;
  request: StoredEvent<'control_request'>;
  /** The worker's deadline policy (its record's `decision_policy`): when and how it decides by itself. */
  policy?: DecisionPolicy | undefined;
  /** When the policy decides it (the inbox's `deadline`), where the worker's policy is not at hand. */
  deadline?: string | undefined;
  /** The route a routed request takes: who may decide it. */
  route?: RouteShown | undefined;
  /** How the request was closed, once it has been (here or elsewhere): the buttons are then disabled and say so. */
  closing?: Closing | undefined;
  /** A decision made for this card elsewhere on the page (the inbox's bulk decision): said as the card's own. */
  result?: DecisionResult | undefined;
  /** A decision for this card is under way elsewhere on the page: its buttons wait. */
  held?: boolean;
  onDecided?: () => void;
  onResult?: (result: DecisionResult) => void;
}) {
  const { api } = useConsole();
  const { request_id: requestId, tool_name: tool, input, description } = request.data;
  const [mode, setMode] = useState<Mode>('choose');
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState(given);
  useEffect(() => {
    if (given) setResult(given);
  }, [given]);

  const decide = (decision: 'allow' | 'deny', extra: { message?: string; scope?: 'always' } = {}) => {
    setBusy(true);
    void decideRequest(api, workerId, { request_id: requestId, decision, ...extra }).then((next) => {
      setResult(next);
      setBusy(false);
      onResult?.(next);
      if (next.kind === 'decided') onDecided?.();
    });
  };

  const decidable = !closing && stillDecidable(result);
  // A person's allow toward a quorum counts once; they may still deny.
  const voted = result?.kind === 'vote';
  const waiting = busy || held;
  useDecisionKeys(requestId, decidable && mode === 'choose' && !waiting, {
    allow: voted ? undefined : () => decide('allow'),
    deny: () => setMode('deny'),
  });

  const summary = summarizeInput(tool, input);
  const until = deadline ? Date.parse(deadline) : Date.parse(request.ts) + (policy ?? DEFAULT_DECISION_POLICY).decision_timeout_s * 1000;
  return (
    <article className="approval" data-approval={decidable ? requestId : undefined} aria-label={`${tool} asks: ${summary}`}>
      <header>
        <span className="tag">{tool}</span> <code>{summary}</code>
        <Countdown until={until} onTimeout={policy?.on_timeout ?? (deadline ? undefined : DEFAULT_DECISION_POLICY.on_timeout)} />
      </header>
      {route && <RouteNote route={route} />}
      {description && <p>{description}</p>}
      <details>
        <summary>Input</summary>
        <pre>{JSON.stringify(input, null, 2)}</pre>
      </details>
      {result && <ResultNote result={result} />}
      {closing && <ClosingNote closing={closing} />}
      {!decidable ? (
        <ChoiceButtons disabled />
      ) : mode === 'deny' ? (
        <DenyForm busy={waiting} onDeny={(message) => decide('deny', message ? { message } : {})} onBack={() => setMode('choose')} />
      ) : mode === 'always' ? (
        <AlwaysConfirm tool={tool} busy={waiting} onSave={() => decide('allow', { scope: 'always' })} onBack={() => setMode('choose')} />
      ) : (
        <ChoiceButtons
          disabled={waiting}
          // A vote cannot give "always" (docs/teams.md, "Quorum"); a person's allow toward one counts once.
          offerAlways={!(route && route.quorum > 1)}
          allowDisabled={voted}
          onAllow={() => decide('allow')}
          onDeny={() => setMode('deny')}
          onAlways={() => setMode('always')}
        />
      )}
    </article>
  );
}

/** y / n decide the first open card on the page, as in `svc attach`. */
function useDecisionKeys(requestId: string, enabled: boolean, on: { allow: (() => void) | undefined; deny: () => void }) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => {
      if (!enabled || event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
      const first = document.querySelector('[data-approval]');
      if (first?.getAttribute('data-approval') !== requestId) return;
      if (event.key === 'y') on.allow?.();
      if (event.key === 'n') on.deny();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });
}

/** Allow, Deny…, Always allow…: all disabled once the request is closed. */
function ChoiceButtons({
  disabled,
  offerAlways = false,
  allowDisabled = false,
  onAllow,
  onDeny,
  onAlways,
}: {
  disabled: boolean;
  offerAlways?: boolean;
  allowDisabled?: boolean;
  onAllow?: () => void;
  onDeny?: () => void;
  onAlways?: () => void;
}) {
  return (
    <div className="buttons">
      <button type="button" className="primary" onClick={onAllow} disabled={disabled || allowDisabled} aria-keyshortcuts={onAllow && 'y'}>
        Allow
      </button>
      <button type="button" className="danger" onClick={onDeny} disabled={disabled} aria-keyshortcuts={onDeny && 'n'}>
        Deny…
      </button>
      {offerAlways && (
        <button type="button" onClick={onAlways} disabled={disabled}>
          Always allow…
        </button>
      )}
    </div>
  );
}

/** How this card's own decision (or the page's, for it) ended. */
function ResultNote({ result }: { result: DecisionResult }) {
  const text = decisionResultText(result);
  if (result.kind === 'failed' || result.kind === 'refused')
    return (
      <p role="alert" className={`error ${result.kind}`}>
        {text}
      </p>
    );
  return (
    <p role="status" className={result.kind === 'vote' ? 'outcome vote' : 'outcome'}>
      {text}
    </p>
  );
}

function ClosingNote({ closing }: { closing: Closing }) {
  return (
    <p role="status" className="closed">
      {closing.decision
        ? `${closing.decision.decision === 'allow' ? 'Allowed' : 'Denied'}: decided by ${deciderOf(closing.decision, closing.source)}${closing.decision.message ? ` — ${closing.decision.message}` : ''}`
        : 'Withdrawn by the agent'}
    </p>
  );
}

function DenyForm({ busy, onDeny, onBack }: { busy: boolean; onDeny: (message: string) => void; onBack: () => void }) {
  const [message, setMessage] = useState('');
  return (
    <form
      onSubmit={(event) => {
        event.preventDefault();
        onDeny(message.trim() ? message : '');
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
        <button type="button" onClick={onBack} disabled={busy}>
          Back
        </button>
      </div>
    </form>
  );
}

function AlwaysConfirm({ tool, busy, onSave, onBack }: { tool: string; busy: boolean; onSave: () => void; onBack: () => void }) {
  return (
    <div>
      <p>
        Saves a rule: <strong>always allow {tool}</strong> for this worker, whatever its input. Later requests for {tool} are not asked.
      </p>
      <div className="buttons">
        <button type="button" className="primary" onClick={onSave} disabled={busy}>
          Save rule and allow
        </button>
        <button type="button" onClick={onBack} disabled={busy}>
          Back
        </button>
      </div>
    </div>
  );
}

/** The time left before the worker's policy decides by itself (`on_timeout`, when known here), counting down. */
function Countdown({ until, onTimeout }: { until: number; onTimeout: DecisionPolicy['on_timeout'] | undefined }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(timer);
  }, []);
  const left = Math.max(0, Math.round((until - now) / 1000));
  const clock = `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
  const outcome = onTimeout === undefined ? 'decided' : onTimeout === 'deny' ? 'denied' : 'allowed';
  const decidesNow = onTimeout === undefined ? 'decides' : onTimeout === 'deny' ? 'denies' : 'allows';
  return (
    <span className="deadline" role="timer" aria-label={`${outcome} by the policy in ${clock}`}>
      {left > 0 ? (onTimeout === undefined ? `the policy decides in ${clock}` : `${outcome} in ${clock}`) : `the policy ${decidesNow} it now`}
    </span>
  );
}
