import type { WorkerDirectory } from '@svc/auth';
import {
  checkRuleLimits,
  workerRoleOf,
  type AccessPerson,
  type ListResponseOf,
  type PolicyReplay,
  type PolicyReplayRpcType,
  type PolicySuggestion,
  type PolicySuggestionsRpcType,
} from '@svc/protocol';
import type { ControlRequestLog } from '@svc/store';
import { outcomeOf, replay } from './replay.js';
import { suggestRules } from './suggestions.js';

/**
 * The policy learned from the decision log (docs/policy.md): suggestions and replay over the
 * requests of a template's sessions — those of workers the caller may see (admins: all).
 */
export function createPolicy(deps: { requests: Pick<ControlRequestLog, 'requestHistory'>; workers: Pick<WorkerDirectory, 'all'> }) {
  const historyOf = (person: AccessPerson, template: string, last: number) => {
    const workers = deps.workers.all().filter((worker) => worker.template === template && workerRoleOf(person, worker) !== undefined);
    return deps.requests.requestHistory(
      workers.map((worker) => worker.worker_id),
      last,
    );
  };
  return {
    async suggestions({ person, query }: PolicySuggestionsRpcType): Promise<ListResponseOf<PolicySuggestion>> {
      const history = await historyOf(person, query.template, query.last ?? 1000);
      const decided = history.map(({ request, decision }) => {
        const people = outcomeOf(decision);
        const person = people.outcome === 'allow' || people.outcome === 'deny' ? { decision: people.outcome, by: people.decided_by! } : undefined;
        return { request, person };
      });
      const items = suggestRules(decided, query.min_evidence ?? 5);
      return { items, total: items.length };
    },

    async replay({ person, body }: PolicyReplayRpcType): Promise<PolicyReplay> {
      // Each rule is matched against every request replayed: capped as any rule is (linear matching, few wildcards).
      const { policy } = body;
      for (const [list, rules] of Object.entries({ auto_approve: policy.auto_approve, deny: policy.deny, ask: policy.ask }))
        (rules ?? []).forEach((rule, index) => checkRuleLimits(rule, `/body/policy/${list}/${index}`));
      (policy.rules ?? []).forEach(
        (rule, index) => rule.input_pattern !== undefined && checkRuleLimits(rule.input_pattern, `/body/policy/rules/${index}/input_pattern`),
      );
      return replay(await historyOf(person, body.template, body.last ?? 200), body);
    },
  };
}

export type Policy = ReturnType<typeof createPolicy>;
