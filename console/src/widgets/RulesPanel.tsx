import { useEffect, useState } from 'react';
import { apiPaths, type ListResponseOf, type PermissionRule, type RuleScope } from '@svc/protocol';
import { reasonOf } from '../api.js';
import { useConsole } from '../console-context.js';
import { formatAge } from '../format-age.js';
import { Link } from '../router.js';

/** Where a rule applies (docs/teams.md, "Rules beyond one worker"). */
const SCOPES: readonly RuleScope[] = ['worker', 'session', 'template', 'team'];

/** How long the search waits after the last key before it asks the gateway. */
const TYPING_PAUSE_MS = 250;

/** How a revocation ended, said on its rule's row. */
type Revocation = { kind: 'revoking' } | { kind: 'revoked' } | { kind: 'failed'; reason: string };

/**
 * The rules people gave with "always" that the person may see (`GET /v1/rules`, newest first),
 * searched by text (`q`: tool, pattern, author or scope) and scope, each with who added it, when,
 * where it applies and the worker it was given on; **Revoke** (`DELETE /v1/rules/{id}`) says on
 * the row how it went, and the row stays until the list is read again.
 */
export function RulesPanel() {
  const { api } = useConsole();
  const [text, setText] = useState('');
  const [q, setQ] = useState('');
  const [scope, setScope] = useState<RuleScope | ''>('');
  const [reads, setReads] = useState(0);
  const [rules, setRules] = useState<PermissionRule[]>();
  const [error, setError] = useState<string>();
  const [revocations, setRevocations] = useState<ReadonlyMap<string, Revocation>>(new Map());
  useEffect(() => {
    const timer = setTimeout(() => setQ(text.trim()), TYPING_PAUSE_MS);
    return () => clearTimeout(timer);
  }, [text]);
  useEffect(() => {
    let stopped = false;
    api
      .request<ListResponseOf<PermissionRule>>('GET', apiPaths.rules({ ...(q ? { q } : {}), ...(scope ? { scope } : {}) }))
      .then((list) => {
        if (stopped) return;
        setRules(list.items);
        setError(undefined);
        setRevocations(new Map());
      })
      .catch((err: unknown) => !stopped && setError(`The rules could not be read: ${reasonOf(err)}`));
    return () => {
      stopped = true;
    };
  }, [api, q, scope, reads]);

  const revoke = (rule: PermissionRule) => {
    const record = (revocation: Revocation) => setRevocations((previous) => new Map(previous).set(rule.rule_id, revocation));
    record({ kind: 'revoking' });
    api
      .request('DELETE', apiPaths.rule(rule.rule_id))
      .then(() => record({ kind: 'revoked' }))
      .catch((err: unknown) => record({ kind: 'failed', reason: reasonOf(err) }));
  };

  return (
    <section aria-labelledby="rules-title">
      <div className="section-head">
        <h2 id="rules-title">Rules given with “always”</h2>
        <button type="button" onClick={() => setReads((count) => count + 1)}>
          Read again
        </button>
      </div>
      <form className="rules-search" role="search" aria-label="Search the rules" onSubmit={(event) => event.preventDefault()}>
        <label>
          Search (tool, pattern, who, scope)
          <input type="search" value={text} onChange={(event) => setText(event.target.value)} maxLength={256} autoComplete="off" />
        </label>
        <label>
          Scope
          <select value={scope} onChange={(event) => setScope(event.target.value as RuleScope | '')}>
            <option value="">all</option>
            {SCOPES.map((one) => (
              <option key={one} value={one}>
                {one}
              </option>
            ))}
          </select>
        </label>
      </form>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {rules === undefined ? (
        !error && <p>Loading…</p>
      ) : rules.length === 0 ? (
        <p>{q || scope ? 'No rule you may see matches.' : 'No rule you may see: a rule is given with “Always allow” on a request.'}</p>
      ) : (
        <RulesTable rules={rules} revocations={revocations} onRevoke={revoke} />
      )}
    </section>
  );
}

function RulesTable({
  rules,
  revocations,
  onRevoke,
}: {
  rules: readonly PermissionRule[];
  revocations: ReadonlyMap<string, Revocation>;
  onRevoke: (rule: PermissionRule) => void;
}) {
  return (
    <table className="listing rules">
      <thead>
        <tr>
          <th scope="col">Rule</th>
          <th scope="col">Scope</th>
          <th scope="col">Added by</th>
          <th scope="col">Given on</th>
          <th scope="col">
            <span className="visually-hidden">Revoke</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {rules.map((rule) => (
          <RuleRow key={rule.rule_id} rule={rule} revocation={revocations.get(rule.rule_id)} onRevoke={onRevoke} />
        ))}
      </tbody>
    </table>
  );
}

/** A rule as people read it: `Write(src/*)`, or the tool alone when it holds whatever the input. */
const ruleText = (rule: PermissionRule) => (rule.input_pattern === undefined ? rule.tool_name : `${rule.tool_name}(${rule.input_pattern})`);

function RuleRow({ rule, revocation, onRevoke }: { rule: PermissionRule; revocation: Revocation | undefined; onRevoke: (rule: PermissionRule) => void }) {
  const text = ruleText(rule);
  return (
    <tr className={revocation?.kind === 'revoked' ? 'revoked' : undefined} data-rule={rule.rule_id}>
      <td data-label="Rule">
        <span className={`verdict verdict-${rule.decision}`}>{rule.decision === 'allow' ? 'always allow' : 'always deny'}</span> <code>{text}</code>
        {rule.input_pattern === undefined && <span className="since"> whatever its input</span>}
      </td>
      <td data-label="Scope">
        {rule.scope ?? 'worker'}
        {rule.scope_key && (
          <>
            {' '}
            <code>{rule.scope_key}</code>
          </>
        )}
      </td>
      <td data-label="Added by">
        {rule.added_by}
        <span className="since">
          {' '}
          <time dateTime={rule.added_at} title={new Date(rule.added_at).toLocaleString()}>
            {formatAge(rule.added_at)} ago
          </time>
        </span>
      </td>
      <td data-label="Given on">{rule.worker_id ? <Link href={`/workers/${rule.worker_id}`}>{rule.worker_id}</Link> : '—'}</td>
      <td>
        <button
          type="button"
          aria-label={`Revoke ${text}`}
          disabled={revocation?.kind === 'revoking' || revocation?.kind === 'revoked'}
          onClick={() => onRevoke(rule)}
        >
          Revoke
        </button>
        <RevocationNote revocation={revocation} />
      </td>
    </tr>
  );
}

function RevocationNote({ revocation }: { revocation: Revocation | undefined }) {
  if (revocation?.kind === 'failed')
    return (
      <span role="alert" className="error revocation">
        Not revoked: {revocation.reason}
      </span>
    );
  return (
    <span role="status" className="outcome revocation">
      {revocation?.kind === 'revoking' ? 'Revoking…' : revocation?.kind === 'revoked' ? 'Revoked: no request is answered by it any more.' : ''}
    </span>
  );
}
