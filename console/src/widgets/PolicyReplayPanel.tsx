import { useState, type FormEvent } from 'react';
import { apiPaths, type PolicyReplay, type PolicyReplayBodyType } from '@svc/protocol';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { candidatePolicy, type CandidateText } from '../policy-candidate.js';
import { ReplayCounts, ReplayItems } from './ReplayResults.js';

/** How many requests a replay reads unless told (the API's default), and at most. */
const DEFAULT_LAST = 200;
const MAX_LAST = 5000;

/**
 * Replays the candidate over the newest requests of the template's sessions (`POST
 * /v1/policy/replay`, docs/policy.md): the counts, what a person denied it would let through
 * stressed, and request by request what it would do beside what people did.
 */
export function PolicyReplayPanel({ template, candidate }: { template: string; candidate: CandidateText }) {
  const { api } = useConsole();
  const [last, setLast] = useState(String(DEFAULT_LAST));
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string>();
  const [result, setResult] = useState<{ replay: PolicyReplay; basis: string }>();
  const lastCount = Number(last);
  const lastValid = Number.isInteger(lastCount) && lastCount >= 1 && lastCount <= MAX_LAST;

  const replay = (event: FormEvent) => {
    event.preventDefault();
    const checked = candidatePolicy(candidate);
    if ('problem' in checked) return setProblem(checked.problem);
    const body: PolicyReplayBodyType = { template, policy: checked.policy, last: lastCount };
    setBusy(true);
    setProblem(undefined);
    api
      .request<PolicyReplay>('POST', apiPaths.policyReplay, body)
      .then((replay) => setResult({ replay, basis: JSON.stringify(body) }))
      .catch((err: unknown) => setProblem(`Not replayed: ${reasonOf(err)}`))
      .finally(() => setBusy(false));
  };
  // A result says which candidate it is of: edited since, it no longer answers for what is written.
  const checked = candidatePolicy(candidate);
  const current = 'policy' in checked ? JSON.stringify({ template, policy: checked.policy, last: lastCount }) : '';
  const stale = result !== undefined && result.basis !== current;

  return (
    <section aria-labelledby="replay-title">
      <h2 id="replay-title">Replay</h2>
      <form className="replay-form" onSubmit={replay} aria-label="Replay the candidate">
        <label>
          Requests to replay (the newest of {template})
          <input type="number" inputMode="numeric" min={1} max={MAX_LAST} value={last} onChange={(event) => setLast(event.target.value)} required />
        </label>
        <button type="submit" className="primary" disabled={busy || !lastValid}>
          Replay over the last {lastValid ? lastCount : '…'} requests
        </button>
      </form>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
      <p role="status" className="outcome">
        {busy ? 'Replaying…' : result && !stale ? replaySummary(result.replay) : ''}
      </p>
      {result && (
        <div className="replay-result">
          {stale && (
            <p className="notice warn">The candidate (or the template, or the count) changed since this replay: replay again to see what it does now.</p>
          )}
          <ReplayCounts counts={result.replay.counts} />
          <ReplayItems items={result.replay.items} />
        </div>
      )}
    </section>
  );
}

/** The replay in a sentence, for the status line a screen reader hears. */
function replaySummary({ counts }: PolicyReplay): string {
  const letThrough = counts.let_through_denied === 0 ? 'nothing a person denied let through' : `${counts.let_through_denied} let through that a person denied`;
  return `Replayed ${counts.requests} requests: ${counts.agreements} of ${counts.decided_by_people} decided as people did, ${letThrough}.`;
}
