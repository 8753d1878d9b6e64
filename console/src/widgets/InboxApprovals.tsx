import { useState } from 'react';
import { apiPaths, type ApprovalItem, type ListResponseOf } from '@svc/protocol';
import { summarizeInput } from '@svc/viewer';
import { useConsole } from '../console-context.js';
import { decideRequest, stillDecidable, type DecisionResult } from '../decide-request.js';
import { Link } from '../router.js';
import { usePolling } from '../use-polling.js';
import { ApprovalCard } from './ApprovalCard.js';
import { BulkDecisionBar, bulkSummary } from './BulkDecisionBar.js';

const keyOf = (item: ApprovalItem) => `${item.worker_id}:${item.request.data.request_id}`;

/**
 * The requests the person may decide now (`GET /v1/approvals`), the nearest deadline first, each
 * decidable on its card; several selected by their checkboxes are allowed or denied at once, each
 * with its own POST (its own decision, its own answer), each answer said on its card. A request
 * decided here stays on the page with how it ended, after the list no longer names it.
 */
export function InboxApprovals() {
  const { api } = useConsole();
  const { value, error } = usePolling(() => api.request<ListResponseOf<ApprovalItem>>('GET', apiPaths.approvals), [api]);
  const { results, record, withKept } = useInboxResults();
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [holding, setHolding] = useState<ReadonlySet<string>>(new Set());
  const [summary, setSummary] = useState<string>();
  const items = value && withKept(value.items);
  const selectable = (items ?? []).filter((item) => stillDecidable(results.get(keyOf(item))) && !holding.has(keyOf(item)));
  const chosen = selectable.filter((item) => selected.has(keyOf(item)));

  const toggle = (key: string, on: boolean) =>
    setSelected((previous) => {
      const next = new Set(previous);
      if (on) next.add(key);
      else next.delete(key);
      return next;
    });
  const decideChosen = (decision: 'allow' | 'deny') => {
    const batch = chosen;
    setHolding(new Set(batch.map(keyOf)));
    setSummary(undefined);
    void Promise.all(
      batch.map(async (item) => {
        const result = await decideRequest(api, item.worker_id, { request_id: item.request.data.request_id, decision });
        record(item, result);
        return result;
      }),
    ).then((answers) => {
      setHolding(new Set());
      // A failed one stays chosen, to try again.
      setSelected((previous) => new Set([...previous].filter((key) => batch.some((item, index) => keyOf(item) === key && answers[index]!.kind === 'failed'))));
      setSummary(bulkSummary(decision, answers));
    });
  };

  if (items === undefined) return error ? <p role="alert">{error}</p> : <p>Loading…</p>;
  return (
    <>
      {error && <p role="alert">{error}</p>}
      {items.length === 0 ? (
        <p>Nothing waits for a decision.</p>
      ) : (
        <>
          <BulkDecisionBar
            chosen={chosen.length}
            selectable={selectable.length}
            busy={holding.size > 0}
            summary={summary}
            onSelectAll={(on) => setSelected(new Set(on ? selectable.map(keyOf) : []))}
            onDecide={decideChosen}
          />
          <ul className="inbox">
            {items.map((item) => {
              const key = keyOf(item);
              return (
                <InboxItem
                  key={key}
                  item={item}
                  result={results.get(key)}
                  chosen={chosen.some((one) => keyOf(one) === key)}
                  choosable={selectable.some((one) => keyOf(one) === key)}
                  held={holding.has(key)}
                  onChoose={(on) => toggle(key, on)}
                  onResult={(result) => record(item, result)}
                />
              );
            })}
          </ul>
        </>
      )}
    </>
  );
}

/** How each request decided here ended, and the items to keep on the page once the list no longer names them. */
function useInboxResults() {
  const [results, setResults] = useState<ReadonlyMap<string, DecisionResult>>(new Map());
  const [kept, setKept] = useState<ReadonlyMap<string, ApprovalItem>>(new Map());
  const record = (item: ApprovalItem, result: DecisionResult) => {
    setResults((previous) => new Map(previous).set(keyOf(item), result));
    // Still open after a failure or a vote: the list names it for as long as it is.
    if (!stillDecidable(result)) setKept((previous) => new Map(previous).set(keyOf(item), item));
  };
  const withKept = (listed: readonly ApprovalItem[]): ApprovalItem[] => {
    const keys = new Set(listed.map(keyOf));
    return [...listed, ...[...kept.values()].filter((item) => !keys.has(keyOf(item)))].sort((a, b) => a.deadline.localeCompare(b.deadline));
  };
  return { results, record, withKept };
}

function InboxItem({
  item,
  result,
  chosen,
  choosable,
  held,
  onChoose,
  onResult,
}: {
  item: ApprovalItem;
  result: DecisionResult | undefined;
  chosen: boolean;
  choosable: boolean;
  held: boolean;
  onChoose: (on: boolean) => void;
  onResult: (result: DecisionResult) => void;
}) {
  const { tool_name: tool, input } = item.request.data;
  return (
    <li>
      <div className="from">
        <label className="pick">
          <input
            type="checkbox"
            checked={chosen}
            disabled={!choosable}
            onChange={(event) => onChoose(event.target.checked)}
            aria-label={`Select ${tool}: ${summarizeInput(tool, input)} (${item.worker_id})`}
          />
        </label>
        <Link href={`/workers/${item.worker_id}`}>{item.worker_id}</Link>
      </div>
      <ApprovalCard
        workerId={item.worker_id}
        request={item.request}
        deadline={item.deadline}
        route={item.route}
        result={result}
        held={held}
        onResult={onResult}
      />
    </li>
  );
}
