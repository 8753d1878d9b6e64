import {
  GIT_PUSH_TOOL,
  isNetworkRule,
  splitToolRule,
  type CreateSessionBodyType,
  type EgressPolicy,
  type ModelAccess,
  type ModelBudget,
  type WorkerWorkspace,
} from '@svc/protocol';
import type { Template } from '../templates/template.js';

/**
 * What a worker may reach through the model proxy: the template's API, and its budget. A
 * session's budget may lower the template's caps, never raise them.
 */
export function modelAccessOf(template: Template, body: CreateSessionBodyType): ModelAccess | undefined {
  if (!template.model) return undefined;
  const lower = (a: number | undefined, b: number | undefined) => (a === undefined ? b : b === undefined ? a : Math.min(a, b));
  const requested = body.overrides?.budget;
  const budget: ModelBudget = {};
  const maxTokens = lower(template.model.max_tokens, requested?.max_tokens);
  const maxCost = lower(template.model.max_cost_usd, requested?.max_cost_usd);
  if (maxTokens !== undefined) budget.max_tokens = maxTokens;
  if (maxCost !== undefined) budget.max_cost_usd = maxCost;
  return { apis: [template.model.api], ...(Object.keys(budget).length > 0 ? { budget } : {}) };
}

/**
 * How the gateway decides the agent's tunnels: the template's egress list, its deny rules for the
 * `network` tool, and whether anyone is asked. Only a sealed sandbox with a sidecar has tunnels
 * (anything else either has the network or nothing to offer a proxy).
 */
export function egressPolicyOf(template: Template, body: CreateSessionBodyType): EgressPolicy | undefined {
  if (!template.sandbox.sealed || !template.sidecar) return undefined;
  return {
    allow: template.sandbox.egress,
    deny: template.sidecar.deny.filter(isNetworkRule),
    autonomous: body.overrides?.autonomous ?? template.sidecar.autonomous,
  };
}

/** The branch a session's work goes to: the template's, or `svc/<session id>`. */
export function workBranchOf(template: Template, sessionId: string): string {
  return template.workspace?.branch ?? `svc/${sessionId}`;
}

/**
 * What the gateway's git proxy needs of a worker with a repository (docs/workspace.md): where it
 * is, the work branch, and the template's rules that name `git_push` — the proxy decides pushes,
 * not the sidecar, whose word a push must not rest on.
 */
export function workspaceOf(template: Template, body: CreateSessionBodyType, sessionId: string): WorkerWorkspace | undefined {
  if (!template.workspace) return undefined;
  const sidecar = template.sidecar;
  const pushRules = (rules: readonly string[] | undefined) => (rules ?? []).filter((rule) => splitToolRule(rule).tool === GIT_PUSH_TOOL);
  return {
    repo: template.workspace.repo,
    branch: workBranchOf(template, sessionId),
    push_rules: { auto_approve: pushRules(sidecar?.auto_approve), deny: pushRules(sidecar?.deny), ask: pushRules(sidecar?.ask) },
    autonomous: body.overrides?.autonomous ?? sidecar?.autonomous ?? false,
  };
}
