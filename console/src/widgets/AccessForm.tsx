import { useId, useState, type FormEvent } from 'react';
import type { AccessEntry, AccessRole } from '@svc/protocol';
import { ROLE_WORDS, ROLES } from '../access-roles.js';

/** The longest name a principal takes after its `user:` or `group:` (the contract's pattern). */
const NAME_MAX = 200;

/** Adds a person (`user:<sub>`) or a group (`group:<name>`) to the access list, with a role. */
export function AccessForm({ busy, onAdd }: { busy: boolean; onAdd: (entry: AccessEntry) => Promise<boolean> }) {
  const titleId = useId();
  const [kind, setKind] = useState<'user' | 'group'>('user');
  const [name, setName] = useState('');
  const [role, setRole] = useState<AccessRole>('viewer');
  const [problem, setProblem] = useState<string>();
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const trimmed = name.trim();
    if (/\s/.test(trimmed)) return setProblem('A name has no spaces.');
    setProblem(undefined);
    // What was typed stays until it is saved: a refusal is said below, to correct it.
    void onAdd({ principal: `${kind}:${trimmed}`, role }).then((saved) => saved && setName(''));
  };
  return (
    <form className="access-add" aria-labelledby={titleId} onSubmit={submit}>
      <h3 id={titleId}>Add someone</h3>
      <label>
        A person or a group
        <select value={kind} onChange={(event) => setKind(event.target.value as 'user' | 'group')}>
          <option value="user">person (user:)</option>
          <option value="group">group (group:)</option>
        </select>
      </label>
      <label>
        {kind === 'user' ? 'Their user id (the token’s sub)' : 'The group’s name'}
        <input value={name} onChange={(event) => setName(event.target.value)} required maxLength={NAME_MAX} autoComplete="off" />
      </label>
      <label>
        Role
        <select value={role} onChange={(event) => setRole(event.target.value as AccessRole)}>
          {ROLES.map((one) => (
            <option key={one} value={one}>
              {one}: {ROLE_WORDS[one]}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" className="primary" disabled={busy || name.trim() === ''}>
        Add
      </button>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
    </form>
  );
}
