import Type, { type Static } from 'typebox';
import { CodedError } from './errors.js';

/**
 * Who may do what with a session and its worker (docs/teams.md). Each role includes the ones
 * before it: a `viewer` watches and reads history and changes; an `approver` also decides the
 * requests routed to them; an `operator` also messages, interrupts, stops, pushes and opens a
 * terminal; an `admin` also edits the session's access. The session's owner is its admin, and so
 * is everyone the identity provider's admin claim names.
 */
const ACCESS_ROLES = ['viewer', 'approver', 'operator', 'admin'] as const;
export type AccessRole = (typeof ACCESS_ROLES)[number];

/** `user:<sub>` or `group:<name>`: a person by their token's `sub`, or everyone a token's group claim names. */
const ACCESS_PRINCIPAL_PATTERN = '^(user|group):[^\\s]{1,200}$';
export const AccessPrincipal = Type.String({ pattern: ACCESS_PRINCIPAL_PATTERN, description: '`user:<sub>` or `group:<name>`.' });

export const AccessEntrySchema = Type.Object({ principal: AccessPrincipal, role: Type.Enum(ACCESS_ROLES) }, { additionalProperties: false });
export type AccessEntry = Static<typeof AccessEntrySchema>;

/** The most entries a session's access list holds. */
export const ACCESS_MAX_ENTRIES = 64;
export const AccessListSchema = Type.Array(AccessEntrySchema, {
  maxItems: ACCESS_MAX_ENTRIES,
  description: 'Who else may see or act on the session, and as what (docs/teams.md).',
});

/** `PUT /v1/sessions/{id}/access`: the session's whole list, replacing the one it had. */
export const PutSessionAccessBody = Type.Object({ access: AccessListSchema }, { additionalProperties: false });

/** A person as the gateway authenticated them: what roles are computed from. */
export interface AccessPerson {
  sub: string;
  /** The groups the identity provider's group claim names. */
  groups: readonly string[];
  /** The identity provider's admin claim: admin of every session. */
  admin: boolean;
}

/** What a session (or its worker) says about access: its owner and its list. */
export interface AccessHolder {
  owner: string;
  access?: readonly AccessEntry[] | undefined;
}

/** Whether `principal` (`user:…` or `group:…`) names `person`. */
export function principalNames(principal: string, person: AccessPerson): boolean {
  if (principal.startsWith('user:')) return principal.slice('user:'.length) === person.sub;
  if (principal.startsWith('group:')) return person.groups.includes(principal.slice('group:'.length));
  return false;
}

export function roleIncludes(role: AccessRole, needed: AccessRole): boolean {
  return ACCESS_ROLES.indexOf(role) >= ACCESS_ROLES.indexOf(needed);
}

/**
 * `person`'s role on a session or worker: `admin` for its owner and for admins, else the highest
 * role an entry naming them (as themselves or by a group) gives; undefined for anyone else, to
 * whom the session does not exist.
 */
export function roleOf(person: AccessPerson, holder: AccessHolder): AccessRole | undefined {
  if (person.admin || person.sub === holder.owner) return 'admin';
  let best: AccessRole | undefined;
  for (const entry of holder.access ?? []) {
    if (principalNames(entry.principal, person) && (best === undefined || roleIncludes(entry.role, best))) best = entry.role;
  }
  return best;
}

/** Every principal that names `person`: `user:<sub>` and one `group:<name>` per group (what a store looks an access list up by). */
export function principalsOf(person: Pick<AccessPerson, 'sub' | 'groups'>): string[] {
  return [`user:${person.sub}`, ...person.groups.map((group) => `group:${group}`)];
}

const withArticle = (role: AccessRole) => `${role === 'viewer' ? 'a' : 'an'} ${role}`;

/** The `403 role_required` for someone whose role on `what` (`worker wrk_…`) is `role` where `needed` is asked. */
export function roleRequiredError(role: AccessRole, needed: AccessRole, what: string): CodedError {
  return new CodedError('role_required', `you are ${withArticle(role)} of ${what}; this needs ${withArticle(needed)} (docs/teams.md)`, { role, needed });
}
