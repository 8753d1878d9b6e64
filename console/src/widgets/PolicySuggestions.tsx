import { useEffect, useState } from 'react';
import { apiPaths, type ListResponseOf, type PolicySuggestion } from '@svc/protocol';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { rulesOf, type CandidateList, type CandidateText } from '../policy-candidate.js';

/**
 * The rules proposed from people's decisions on a template's requests (`GET
 * /v1/policy/suggestions`, docs/policy.md), the most-decided first, each with its evidence and a
 * button adding it to the candidate.
 */
export function PolicySuggestions({
  template,
  minEvidence,
  candidate,
  onAdd,
}: {
  template: string;
  minEvidence: number;
  candidate: CandidateText;
  onAdd: (list: CandidateList, rule: string) => void;
}) {
  const { api } = useConsole();
  const [read, setRead] = useState<{ items: PolicySuggestion[]; of: string }>();
  const [error, setError] = useState<string>();
  const [reads, setReads] = useState(0);
  const query = JSON.stringify([template, minEvidence]);
  useEffect(() => {
    let stopped = false;
    setError(undefined);
    api
      .request<ListResponseOf<PolicySuggestion>>('GET', apiPaths.policySuggestions({ template, min_evidence: minEvidence }))
      .then((list) => !stopped && setRead({ items: list.items, of: query }))
      .catch((err: unknown) => !stopped && setError(`The suggestions could not be read: ${reasonOf(err)}`));
    return () => {
      stopped = true;
    };
  }, [api, template, minEvidence, reads]);
  const items = read?.of === query ? read.items : undefined;

  return (
    <section aria-labelledby="suggestions-title">
      <div className="section-head">
        <h2 id="suggestions-title">Suggestions</h2>
        <button type="button" onClick={() => setReads((count) => count + 1)}>
          Read again
        </button>
      </div>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {items === undefined ? (
        !error && <p>Loading…</p>
      ) : items.length === 0 ? (
        <p>
          No suggestion for {template}: no rule has at least {minEvidence} decisions by people behind it, all allowing it (or nearly all denying it).
        </p>
      ) : (
        <table className="listing suggestions">
          <thead>
            <tr>
              <th scope="col">Rule</th>
              <th scope="col">List</th>
              <th scope="col">Evidence</th>
              <th scope="col">Why</th>
              <th scope="col">
                <span className="visually-hidden">Add</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {items.map((suggestion) => (
              <SuggestionRow
                key={`${suggestion.list}:${suggestion.rule}`}
                suggestion={suggestion}
                added={rulesOf(candidate[suggestion.list]).includes(suggestion.rule)}
                onAdd={onAdd}
              />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

/** One suggestion: its rule, its list, what it rests on, why, and its button. */
function SuggestionRow({ suggestion, added, onAdd }: { suggestion: PolicySuggestion; added: boolean; onAdd: (list: CandidateList, rule: string) => void }) {
  const { rule, list, evidence, why } = suggestion;
  return (
    <tr>
      <td data-label="Rule">
        <code>{rule}</code>
      </td>
      <td data-label="List">
        <span className={`list-name list-${list}`}>{list}</span>
      </td>
      <td data-label="Evidence" className="evidence">
        <span>
          {evidence.requests} decisions: {evidence.allowed} allowed, {evidence.denied} denied
        </span>
        <span className="since">
          {evidence.distinct_inputs} {evidence.distinct_inputs === 1 ? 'input' : 'inputs'} · by {evidence.deciders.join(', ')} · last{' '}
          <time dateTime={evidence.last_at} title={new Date(evidence.last_at).toLocaleString()}>
            {formatAge(evidence.last_at)} ago
          </time>
        </span>
        {evidence.examples.length > 0 && (
          <span className="since">
            e.g.{' '}
            {evidence.examples.map((example, index) => (
              <span key={example}>
                {index > 0 && ', '}
                <code>{example}</code>
              </span>
            ))}
          </span>
        )}
      </td>
      <td data-label="Why">{why}</td>
      <td>
        <button type="button" aria-label={`Add to ${list}: ${rule}`} onClick={() => onAdd(list, rule)}>
          Add to {list}
        </button>
        {added && <span className="since in-candidate"> in the candidate</span>}
      </td>
    </tr>
  );
}
