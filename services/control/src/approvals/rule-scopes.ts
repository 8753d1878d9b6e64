import type { UserAssertion } from '@svc/auth';
import {
  CodedError,
  roleIncludes,
  roleRequiredError,
  workerRoleOf,
  type AccessPerson,
  type DecideRequestType,
  type EventData,
  type PermissionRule,
  type RuleScope,
  type WorkerRecord,
} from '@svc/protocol';

/** The keys of the wider rules that apply to a worker: its session's, its template's, its teams'. */
export function ruleKeysOf(worker: WorkerRecord | undefined): string[] {
  if (!worker) return [];
  return [
    ...(worker.session_id ? [`session:${worker.session_id}`] : []),
    ...(worker.template ? [`template:${worker.template}`] : []),
    ...(worker.teams ?? []).map((team) => `team:${team}`),
  ];
}

/**
 * What a person's "always" at a scope beyond the worker adds to their decision (docs/teams.md,
 * "Rules"): the scope and the key it applies to. Who may: `session`, whoever may decide the
 * request; `template`, an operator or more of the worker (a rule for every session of the
 * template); `team`, a member of that team (one of their groups), whose sessions it then covers.
 */
export function ruleScopeData(
  person: UserAssertion,
  worker: WorkerRecord | undefined,
  body: DecideRequestType['decision'],
): Pick<EventData<'control_response'>, 'rule_scope' | 'rule_key'> {
  const scope: RuleScope = body.rule_scope ?? 'worker';
  if (body.rule_team !== undefined && scope !== 'team') throw new CodedError('invalid_request', '/body/rule_team goes with rule_scope "team"');
  if (scope === 'worker') return {};
  if (body.scope !== 'always') throw new CodedError('invalid_request', `/body/rule_scope: a rule is given with scope "always"`);
  if (!worker) throw new CodedError('worker_not_found', `worker ${person.workerId} does not exist`);
  switch (scope) {
    case 'session':
      if (!worker.session_id) throw new CodedError('invalid_request', `/body/rule_scope: worker ${worker.worker_id} has no session`);
      return { rule_scope: scope, rule_key: `session:${worker.session_id}` };
    case 'template': {
      if (!worker.template) throw new CodedError('invalid_request', `/body/rule_scope: worker ${worker.worker_id} was not made from a template`);
      const role = workerRoleOf(person, worker) ?? 'viewer';
      if (!person.admin && !roleIncludes(role, 'operator'))
        throw roleRequiredError(role, 'operator', `worker ${worker.worker_id} (a rule for template ${worker.template})`);
      return { rule_scope: scope, rule_key: `template:${worker.template}` };
    }
    case 'team': {
      const team = body.rule_team;
      if (team === undefined) throw new CodedError('invalid_request', '/body/rule_team: a team rule names the team (one of your groups)');
      if (!person.groups.includes(team)) throw new CodedError('forbidden', `a rule for team ${team} is given by its members; you are not one`);
      return { rule_scope: scope, rule_key: `team:${team}` };
    }
  }
}

/**
 * Whether `person` may see a rule: a worker's or session's rule with the worker it was given on
 * (`seesWorker`), a template's anyone may (templates are listed to everyone), a team's its members.
 * Admins see every rule.
 */
export function seesRule(person: AccessPerson, rule: PermissionRule, seesWorker: (workerId: string) => boolean): boolean {
  if (person.admin) return true;
  const key = rule.scope_key ?? '';
  if (rule.scope === 'template') return true;
  if (rule.scope === 'team') return person.groups.includes(key.slice('team:'.length));
  return rule.worker_id !== undefined && seesWorker(rule.worker_id);
}

/**
 * Whether `person` may revoke a rule: who added it; for a worker's or session's rule, an approver
 * of the worker it was given on; a template's, an operator of it; a team's, a member. Admins may
 * revoke any.
 */
export function mayRevoke(person: AccessPerson, rule: PermissionRule, worker: WorkerRecord | undefined): boolean {
  if (person.admin || rule.added_by === person.sub) return true;
  if (rule.scope === 'team') return person.groups.includes((rule.scope_key ?? '').slice('team:'.length));
  const role = worker && workerRoleOf(person, worker);
  return role !== undefined && roleIncludes(role, rule.scope === 'template' ? 'operator' : 'approver');
}
