import Type, { type Static } from 'typebox';
import { storedEventSchemaOf, type StoredEvent } from './envelope.js';
import { Timestamp, WorkerId } from './primitives.js';
import { AccessPrincipal, principalNames, roleOf, type AccessHolder, type AccessPerson, type AccessRole } from './access.js';
import { parseRequestRule } from './request-rules.js';
import { RULE_MAX_LENGTH } from './rules.js';

/** The most routes a template holds, people a route names, and votes a quorum asks for. */
export const APPROVAL_LIMITS = { routes: 32, principals: 32, quorum: 16 } as const;

const Principals = Type.Array(AccessPrincipal, { minItems: 1, maxItems: APPROVAL_LIMITS.principals, uniqueItems: true });

/**
 * One approval route (docs/teams.md, "Routing"): the requests its rule matches are decided by the
 * people it names, not the session's approvers; after `escalate_after_s` undecided they are
 * offered to `escalate_to` as well; with `quorum` above 1 an allow needs that many different
 * people (any deny ends it).
 */
export const ApprovalRouteSchema = Type.Object(
  {
    match: Type.String({ minLength: 1, maxLength: RULE_MAX_LENGTH, description: 'A tool rule: `Bash(git push*)`, `git_push(refs/heads/main)`.' }),
    to: Principals,
    escalate_after_s: Type.Optional(Type.Integer({ minimum: 1, maximum: 7 * 24 * 3600 })),
    escalate_to: Type.Optional(Principals),
    quorum: Type.Optional(Type.Integer({ minimum: 1, maximum: APPROVAL_LIMITS.quorum })),
  },
  { additionalProperties: false },
);
export type ApprovalRoute = Static<typeof ApprovalRouteSchema>;

export const ApprovalRoutesSchema = Type.Array(ApprovalRouteSchema, { maxItems: APPROVAL_LIMITS.routes });

/** The route a request takes: the first whose rule matches it (an allow of many files needs every path matched), with its place in the list. */
export function routeOf(
  routes: readonly ApprovalRoute[] | undefined,
  request: { tool_name: string; input: Record<string, unknown> },
): { route: ApprovalRoute; index: number } | undefined {
  const index = (routes ?? []).findIndex((route) => parseRequestRule(route.match).matches(request.tool_name, request.input, 'some'));
  return index < 0 ? undefined : { route: routes![index]!, index };
}

/** Who may decide a routed request: its route's people, and once escalated its `escalate_to` too. */
export function routeDeciders(route: ApprovalRoute, escalated: boolean): string[] {
  return [...route.to, ...(escalated ? (route.escalate_to ?? []) : [])];
}

/** Whether `person` is among `principals`. */
export function namedAmong(principals: readonly string[], person: AccessPerson): boolean {
  return principals.some((principal) => principalNames(principal, person));
}

/** Every principal a worker's routes name: the people requests may be routed or escalated to. */
export function routePrincipals(routes: readonly ApprovalRoute[] | undefined): string[] {
  return [...new Set((routes ?? []).flatMap((route) => [...route.to, ...(route.escalate_to ?? [])]))];
}

/**
 * `person`'s role on a worker: as its access list gives (`roleOf`), else `viewer` for someone its
 * approval routes name — they see the worker whose requests they may be asked to decide.
 */
export function workerRoleOf(person: AccessPerson, worker: AccessHolder & { approvals?: readonly ApprovalRoute[] | undefined }): AccessRole | undefined {
  return roleOf(person, worker) ?? (namedAmong(routePrincipals(worker.approvals), person) ? 'viewer' : undefined);
}

/**
 * One request waiting for the person who asks (`GET /v1/approvals`): the request, its deadline,
 * and for a routed one its rule, who may decide it, whether it was escalated, and a quorum's count.
 */
export const ApprovalItemSchema = Type.Object(
  {
    worker_id: WorkerId,
    request: storedEventSchemaOf('control_request'),
    deadline: Timestamp,
    route: Type.Optional(
      Type.Object(
        {
          rule: Type.String(),
          deciders: Type.Array(Type.String()),
          escalated: Type.Boolean(),
          quorum: Type.Integer({ minimum: 1 }),
          allows: Type.Integer({ minimum: 0 }),
          voters: Type.Array(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false, title: 'ApprovalItem' },
);
export type ApprovalItem = Omit<Static<typeof ApprovalItemSchema>, 'request'> & { request: StoredEvent<'control_request'> };

/** `GET /v1/approvals?for=me`: the requests the caller may decide now, across every worker they see, the nearest deadline first. */
export const ApprovalsQuery = Type.Object({ for: Type.Optional(Type.Literal('me', { default: 'me' })) }, { additionalProperties: false });

/** `svc.rpc.control.approvals`: the person the gateway authenticated (a read: no assertion needed). */
export const ApprovalsRpc = Type.Object(
  {
    person: Type.Object(
      { sub: Type.String({ minLength: 1, maxLength: 256 }), groups: Type.Array(Type.String({ maxLength: 256 }), { maxItems: 256 }), admin: Type.Boolean() },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type ApprovalsRpcType = Static<typeof ApprovalsRpc>;
