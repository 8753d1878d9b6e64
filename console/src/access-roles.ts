import type { AccessRole } from '@svc/protocol';

/** What each role may, in a few words (docs/teams.md, "Roles"), in order: each includes the ones before it. */
export const ROLE_WORDS: Record<AccessRole, string> = {
  viewer: 'sees the session and its worker',
  approver: 'also decides its requests',
  operator: 'also messages, stops, pushes, opens a terminal',
  admin: 'also changes this list',
};

/** The roles, the least first. */
export const ROLES = Object.keys(ROLE_WORDS) as AccessRole[];
