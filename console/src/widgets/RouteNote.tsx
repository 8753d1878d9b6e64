import type { ApprovalItem } from '@svc/protocol';

/**
 * A routed request's route as a card shows it (docs/teams.md, "Routing"): the inbox knows all of
 * it; a worker page knows the rule and the people from the worker's routes, not the votes.
 */
export type RouteShown = Pick<NonNullable<ApprovalItem['route']>, 'rule' | 'deciders' | 'quorum'> &
  Partial<Pick<NonNullable<ApprovalItem['route']>, 'escalated' | 'allows' | 'voters'>>;

/** "1 of 2 allowed: bob", or what a quorum needs when the count is not known here. */
function quorumText(route: RouteShown): string {
  if (route.allows === undefined) return `${route.quorum} people must allow it`;
  const voters = route.voters ?? [];
  return `${route.allows} of ${route.quorum} allowed${voters.length > 0 ? `: ${voters.join(', ')}` : ''}`;
}

/** Who may decide a routed request and by which rule; "escalated" once it was; a quorum's count. */
export function RouteNote({ route }: { route: RouteShown }) {
  return (
    <p className="route">
      Routed to <strong>{route.deciders.join(', ')}</strong> by the rule <code>{route.rule}</code>
      {route.escalated && (
        <>
          {' · '}
          <span className="escalated">escalated</span>
        </>
      )}
      {route.quorum > 1 && (
        <>
          {' · '}
          <span className="quorum">{quorumText(route)}</span>
        </>
      )}
    </p>
  );
}
