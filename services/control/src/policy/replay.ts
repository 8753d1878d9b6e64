import { createPermissionEngine, parseSource, type PermissionRule, type PolicyReplay, type PolicyReplayBodyType, type StoredEvent } from '@svc/protocol';

type Outcome = PolicyReplay['items'][number]['people'];

/** What was done with a request: a person's decision, the worker's own policy's, the deadline's, or nothing yet. */
export function outcomeOf(decision: StoredEvent<'control_response'> | undefined): Outcome {
  if (!decision) return { outcome: 'open' };
  const source = parseSource(decision.source);
  const verdict = decision.data.decision;
  if (source.kind === 'person') return { outcome: verdict, decided_by: source.sub };
  if (source.kind === 'policy') return { outcome: verdict === 'allow' ? 'timeout_allow' : 'timeout_deny', decided_by: 'policy:timeout' };
  return { outcome: verdict === 'allow' ? 'policy_allow' : 'policy_deny', decided_by: 'policy' };
}

/**
 * A candidate policy run over past requests (docs/policy.md): each request is decided by the
 * sidecar's own engine (`createPermissionEngine`: deny, people's rules, ask, auto_approve, the
 * rest asked) under the candidate's lists and rules, beside what was done then, and counted:
 * agreements with people, allows of what a person denied, denials of what a person allowed,
 * questions a person would have been spared, and what the candidate would still ask.
 */
export function replay(
  history: ReadonlyArray<{ request: StoredEvent<'control_request'>; decision: StoredEvent<'control_response'> | undefined }>,
  body: PolicyReplayBodyType,
): PolicyReplay {
  const { policy } = body;
  const engine = createPermissionEngine(
    { auto_approve: policy.auto_approve ?? [], deny: policy.deny ?? [], ask: policy.ask ?? [] },
    { autonomous: policy.autonomous ?? false },
  );
  engine.setAddedRules(
    (policy.rules ?? []).map((rule, index): PermissionRule => ({
      rule_id: String(index + 1),
      tool_name: rule.tool_name,
      ...(rule.input_pattern === undefined ? {} : { input_pattern: rule.input_pattern }),
      decision: rule.decision,
      added_by: 'the candidate',
      request_id: `candidate-${index + 1}`,
      added_at: new Date(0).toISOString(),
    })),
  );
  const counts = { requests: 0, decided_by_people: 0, agreements: 0, let_through_denied: 0, blocked_allowed: 0, questions_spared: 0, still_asked: 0 };
  const items = history.map(({ request, decision }) => {
    const verdict = engine.decide(request.data.tool_name, request.data.input);
    const people = outcomeOf(decision);
    counts.requests++;
    if (verdict.decision === 'ask') counts.still_asked++;
    if (people.outcome === 'allow' || people.outcome === 'deny') {
      counts.decided_by_people++;
      if (verdict.decision === people.outcome) counts.agreements++;
      if (verdict.decision !== 'ask') counts.questions_spared++;
      if (verdict.decision === 'allow' && people.outcome === 'deny') counts.let_through_denied++;
      if (verdict.decision === 'deny' && people.outcome === 'allow') counts.blocked_allowed++;
    }
    return {
      worker_id: request.worker_id,
      request_id: request.data.request_id,
      tool_name: request.data.tool_name,
      input: request.data.input,
      at: request.ts,
      policy: { decision: verdict.decision, reason: verdict.reason },
      people,
    };
  });
  return { counts, items };
}
