import { useState } from 'react';
import { apiPaths, roleOf, type AccessEntry, type Session, type Worker } from '@svc/protocol';
import { ROLE_WORDS } from '../access-roles.js';
import { reasonOf } from '../api.js';
import { tokenPerson } from '../auth.js';
import { useConsole } from '../console-context.js';
import { AccessForm } from './AccessForm.js';

/**
 * The session's access list (docs/teams.md): who besides its owner may see or act on it, and as
 * what. Its owner and admins add (a principal and a role; the same principal again takes the new
 * role) and remove entries, each change saved at once with `PUT /v1/sessions/{id}/access`; anyone
 * else reads the list. The list shown is the one saved here until the worker's record, which the
 * page reads every 2 s, moves on from the one it had then.
 */
export function AccessPanel({ worker, sessionId }: { worker: Worker; sessionId: string }) {
  const { api, auth } = useConsole();
  const person = auth.signedIn && tokenPerson(auth.signedIn.token);
  const mayChange = person !== undefined && roleOf(person, worker) === 'admin';
  const listed = worker.access ?? [];
  const [saved, setSaved] = useState<{ access: AccessEntry[]; basis: string }>();
  const access = saved && saved.basis === JSON.stringify(listed) ? saved.access : listed;
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string>();
  const [done, setDone] = useState<string>();

  /** Saves `next` as the whole list; whether it was saved. */
  const save = (next: AccessEntry[], what: string): Promise<boolean> => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    const basis = JSON.stringify(listed);
    return api
      .request<Session>('PUT', apiPaths.sessionAccess(sessionId), { access: next })
      .then((session) => {
        setSaved({ access: session.access ?? [], basis });
        setDone(what);
        return true;
      })
      .catch((err: unknown) => {
        setFailure(`Not saved: ${reasonOf(err)}`);
        return false;
      })
      .finally(() => setBusy(false));
  };
  const add = (entry: AccessEntry) =>
    save(
      access.some((one) => one.principal === entry.principal) ? access.map((one) => (one.principal === entry.principal ? entry : one)) : [...access, entry],
      `Saved: ${entry.principal} is ${entry.role === 'viewer' ? 'a' : 'an'} ${entry.role}.`,
    );
  const remove = (principal: string) =>
    void save(
      access.filter((one) => one.principal !== principal),
      `Saved: ${principal} removed.`,
    );

  return (
    <div className="access">
      <p>
        Owner: <strong>{worker.owner}</strong> (an admin of the session). Besides the owner and the deployment's admins, these may see or act on it:
      </p>
      {access.length === 0 ? (
        <p>Nobody else.</p>
      ) : (
        <table className="access-list">
          <thead>
            <tr>
              <th scope="col">Who</th>
              <th scope="col">Role</th>
              {mayChange && (
                <th scope="col">
                  <span className="visually-hidden">Remove</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {access.map((entry) => (
              <tr key={entry.principal}>
                <td>
                  <code>{entry.principal}</code>
                </td>
                <td>
                  {entry.role} <span className="since">({ROLE_WORDS[entry.role]})</span>
                </td>
                {mayChange && (
                  <td>
                    <button type="button" onClick={() => remove(entry.principal)} disabled={busy} aria-label={`Remove ${entry.principal}`}>
                      Remove
                    </button>
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {mayChange ? <AccessForm busy={busy} onAdd={add} /> : <p className="since">Only the session&apos;s owner and admins change this list.</p>}
      {failure && (
        <p role="alert" className="error">
          {failure}
        </p>
      )}
      <p role="status" className="outcome">
        {done}
      </p>
    </div>
  );
}
