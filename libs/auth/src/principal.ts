/** Who is calling: a person (OIDC JWT) or one worker's sidecar (worker token). */
export type Principal = UserPrincipal | WorkerPrincipal;

export interface UserPrincipal {
  kind: 'user';
  /** The JWT `sub`: what ownership and `decided_by` record. */
  sub: string;
  name?: string;
  email?: string;
  /** The groups the identity provider's group claim names (docs/teams.md): access lists name them. */
  groups: readonly string[];
  /** Sees every session and worker (the configured admin claim is true). */
  admin: boolean;
}

interface WorkerPrincipal {
  kind: 'worker';
  workerId: string;
}

/** A short, token-free label for logs and rate-limit keys: `user:<sub>` or `worker:<id>`. */
export function principalLabel(principal: Principal): string {
  return principal.kind === 'user' ? `user:${principal.sub}` : `worker:${principal.workerId}`;
}
