import { CodedError, namedAmong, roleIncludes, roleOf, roleRequiredError, type AccessRole, type CallerType, type Session } from '@svc/protocol';
import type { SessionStore } from './session-store.js';

/**
 * The session, if the caller may see it and do what `needed` allows (docs/teams.md): anyone who
 * may not see it is told it does not exist; someone who may see it but not do this, what their
 * role is and what it needs.
 */
export async function visibleSession(
  deps: { store: SessionStore },
  request: { caller: CallerType; session_id: string },
  needed: AccessRole = 'viewer',
): Promise<NonNullable<Awaited<ReturnType<SessionStore['get']>>>> {
  const row = await deps.store.get(request.session_id, request.caller);
  if (!row) throw new CodedError('session_not_found', `session ${request.session_id} does not exist`);
  checkRole(request.caller, row, needed, { kind: 'session', id: row.session.id });
  return row;
}

/**
 * Refuses (`403 role_required`) a caller whose role on a session does not include `needed`; one
 * who has none is told it does not exist. Someone only its approval routes name is a viewer.
 */
export function checkRole(
  caller: CallerType,
  row: { session: Pick<Session, 'owner' | 'access'>; principals: readonly string[] },
  needed: AccessRole,
  of: { kind: 'session' | 'worker'; id: string },
): void {
  const what = `${of.kind} ${of.id}`;
  const role = roleOf(caller, row.session) ?? (namedAmong(row.principals, caller) ? 'viewer' : undefined);
  if (!role) throw new CodedError(`${of.kind}_not_found`, `${what} does not exist`);
  if (!roleIncludes(role, needed)) throw roleRequiredError(role, needed, what);
}
