import { useState } from 'react';
import type { PolicyReplay } from '@svc/protocol';
import { summarizeInput } from '@svc/viewer';
import { formatAge } from '../format-age.js';
import { isDisagreement, peopleText, VERDICT_WORDS } from '../policy-candidate.js';
import { Link } from '../router.js';

type Counts = PolicyReplay['counts'];
type ReplayItem = PolicyReplay['items'][number];

/** The counts in the order a person reads them, each in words (docs/policy.md, "Replay"). */
const COUNT_WORDS: ReadonlyArray<[keyof Counts, string]> = [
  ['requests', 'Requests replayed'],
  ['decided_by_people', 'Decided by people'],
  ['agreements', 'Decided as the person did'],
  ['let_through_denied', 'Let through what a person denied'],
  ['blocked_allowed', 'Blocked what a person allowed'],
  ['questions_spared', 'Questions spared'],
  ['still_asked', 'Still asked'],
];

/** The most requests the table shows at once: a replay reads up to 5,000. */
const SHOWN_ITEMS = 500;

/** A replay's counts; what a person denied that the candidate would let through is stressed whenever there is any. */
export function ReplayCounts({ counts }: { counts: Counts }) {
  return (
    <dl className="replay-counts">
      {COUNT_WORDS.map(([key, words]) => {
        const stressed = key === 'let_through_denied' && counts[key] > 0;
        return (
          <div key={key} className={stressed ? 'stressed' : undefined} data-count={key}>
            <dt>{words}</dt>
            <dd>
              {counts[key]}
              {stressed && <strong> — a person denied {counts[key] === 1 ? 'it' : 'these'}: look before adopting</strong>}
            </dd>
          </div>
        );
      })}
    </dl>
  );
}

/** Request by request: what it was, what the candidate would do and why, what people did; filterable to the disagreements. */
export function ReplayItems({ items }: { items: readonly ReplayItem[] }) {
  const [onlyDisagreements, setOnlyDisagreements] = useState(false);
  const disagreements = items.filter(isDisagreement);
  const chosen = onlyDisagreements ? disagreements : items;
  const shown = chosen.slice(0, SHOWN_ITEMS);
  return (
    <>
      <div className="section-head">
        <h3>Request by request</h3>
        <label className="pick">
          <input type="checkbox" checked={onlyDisagreements} onChange={(event) => setOnlyDisagreements(event.target.checked)} />
          Only where it decides otherwise than people did ({disagreements.length})
        </label>
      </div>
      {chosen.length > shown.length && (
        <p className="since">
          The first {shown.length} of {chosen.length} shown.
        </p>
      )}
      {shown.length === 0 ? (
        <p>{onlyDisagreements ? 'The candidate decides every request as people did (or asks).' : 'No request of this template to replay.'}</p>
      ) : (
        <table className="listing replay-items">
          <thead>
            <tr>
              <th scope="col">Request</th>
              <th scope="col">The candidate</th>
              <th scope="col">People</th>
            </tr>
          </thead>
          <tbody>
            {shown.map((item) => (
              <ReplayRow key={`${item.worker_id}:${item.request_id}`} item={item} />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function ReplayRow({ item }: { item: ReplayItem }) {
  const input = typeof item.input === 'object' && item.input !== null ? (item.input as Record<string, unknown>) : {};
  const differs = isDisagreement(item);
  return (
    <tr className={differs ? 'differs' : undefined}>
      <td data-label="Request">
        <span>
          <strong>{item.tool_name}</strong> <code>{summarizeInput(item.tool_name, input)}</code>
        </span>
        <span className="since">
          <Link href={`/workers/${item.worker_id}`}>{item.worker_id}</Link> ·{' '}
          <time dateTime={item.at} title={new Date(item.at).toLocaleString()}>
            {formatAge(item.at)} ago
          </time>
        </span>
      </td>
      <td data-label="The candidate">
        <span className={`verdict verdict-${item.policy.decision}`}>{VERDICT_WORDS[item.policy.decision]}</span>
        {differs && <strong className="differs-note"> (otherwise than the person)</strong>}
        <span className="since">{item.policy.reason}</span>
      </td>
      <td data-label="People">{peopleText(item.people)}</td>
    </tr>
  );
}
