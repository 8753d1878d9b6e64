import { useEffect, useRef } from 'react';
import type { DecisionResult } from '../decide-request.js';

/** What a bulk decision came to, counted by how each request's own decision ended (each card says its own). */
export function bulkSummary(decision: 'allow' | 'deny', results: readonly DecisionResult[]): string {
  const count = (kind: DecisionResult['kind']) => results.filter((result) => result.kind === kind).length;
  const parts = [
    [count('decided'), decision === 'allow' ? 'allowed' : 'denied'],
    [count('vote'), count('vote') === 1 ? 'vote counted' : 'votes counted'],
    [count('closed'), 'closed first'],
    [count('refused'), 'not yours to decide'],
    [count('failed'), 'failed'],
  ] as const;
  const requests = results.length === 1 ? '1 request' : `${results.length} requests`;
  return `${decision === 'allow' ? 'Allow' : 'Deny'} for ${requests}: ${parts
    .filter(([n]) => n > 0)
    .map(([n, what]) => `${n} ${what}`)
    .join(', ')}.`;
}

/**
 * Allow or deny the selected requests at once: "Select all" (mixed while some are), and the two
 * buttons, which say how many they decide; what the last one came to, as a status.
 */
export function BulkDecisionBar({
  chosen,
  selectable,
  busy,
  summary,
  onSelectAll,
  onDecide,
}: {
  chosen: number;
  selectable: number;
  busy: boolean;
  summary: string | undefined;
  onSelectAll: (on: boolean) => void;
  onDecide: (decision: 'allow' | 'deny') => void;
}) {
  const all = useRef<HTMLInputElement>(null);
  const mixed = chosen > 0 && chosen < selectable;
  useEffect(() => {
    if (all.current) all.current.indeterminate = mixed;
  }, [mixed]);
  const none = chosen === 0 || busy;
  return (
    <div className="bulk" role="group" aria-label="Decide the selected requests">
      <label className="pick-all">
        <input
          ref={all}
          type="checkbox"
          checked={chosen > 0 && chosen === selectable}
          disabled={selectable === 0 || busy}
          onChange={(event) => onSelectAll(event.target.checked)}
        />
        Select all
      </label>
      <button type="button" className="primary" disabled={none} onClick={() => onDecide('allow')}>
        Allow selected ({chosen})
      </button>
      <button type="button" className="danger" disabled={none} onClick={() => onDecide('deny')}>
        Deny selected ({chosen})
      </button>
      <p role="status" className="bulk-summary">
        {summary}
      </p>
    </div>
  );
}
