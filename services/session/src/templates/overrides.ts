import { CodedError, type CreateSessionBodyType, type CallerType } from '@svc/protocol';
import { repositoryUrlProblem, type Template } from './template.js';

/**
 * Refuses the overrides of a session request that the template does not let this person make
 * (docs/sessions.md "Overrides"), with `forbidden` (403) naming the template and the key. Only an
 * override that loosens the template is weighed: turning autonomous mode on for a template that
 * is not autonomous (nobody would be asked, and every egress tunnel nothing denies would open).
 * Turning it off, or naming what the template already says, is anyone's.
 */
export function checkOverrides(template: Template, body: CreateSessionBodyType, caller: Pick<CallerType, 'admin'>): void {
  checkWorkspaceOverrides(template, body, caller);
  const turnsAutonomousOn = body.overrides?.autonomous === true && template.sidecar !== undefined && !template.sidecar.autonomous;
  if (!turnsAutonomousOn) return;
  const permitted = template.overrides.autonomous;
  if (permitted === 'anyone' || (permitted === 'admins' && caller.admin)) return;
  throw new CodedError(
    'forbidden',
    `template ${template.name} lets ${permitted === 'admins' ? 'only admins' : 'nobody'} set overrides.autonomous (its [overrides] autonomous = "${permitted}"): start the session without it, and people decide what the agent asks`,
    { template: template.name, key: 'overrides.autonomous', permitted },
  );
}

const WORKSPACE_OVERRIDE_KEYS = { repo: 'workspace_repo', ref: 'workspace_ref', branch: 'workspace_branch' } as const;

/**
 * A session's `overrides.workspace` (docs/workspace.md, "The template"): each key only where the
 * template's `[overrides]` lets this person (another repository by default nobody: it would be
 * cloned with the control plane's token for its host), on a template with a `[workspace]`, and a
 * repository as a template's would be taken.
 */
function checkWorkspaceOverrides(template: Template, body: CreateSessionBodyType, caller: Pick<CallerType, 'admin'>): void {
  const asked = body.overrides?.workspace;
  if (!asked) return;
  if (!template.workspace) throw new CodedError('invalid_request', `template ${template.name} has no [workspace]: overrides.workspace has nothing to change`);
  for (const key of Object.keys(asked) as Array<keyof typeof WORKSPACE_OVERRIDE_KEYS>) {
    const setting = WORKSPACE_OVERRIDE_KEYS[key];
    const permitted = template.overrides[setting];
    if (permitted === 'anyone' || (permitted === 'admins' && caller.admin)) continue;
    throw new CodedError(
      'forbidden',
      `template ${template.name} lets ${permitted === 'admins' ? 'only admins' : 'nobody'} set overrides.workspace.${key} (its [overrides] ${setting} = "${permitted}")`,
      { template: template.name, key: `overrides.workspace.${key}`, permitted },
    );
  }
  const problem = asked.repo !== undefined ? repositoryUrlProblem(asked.repo) : undefined;
  if (problem) throw new CodedError('invalid_request', `/body/overrides/workspace/repo ${problem}`);
}

/** The template as this session runs it: its `[workspace]` with the session's overrides (checked by `checkOverrides`). */
export function withWorkspaceOverrides(template: Template, body: CreateSessionBodyType): Template {
  const asked = body.overrides?.workspace;
  if (!asked || !template.workspace) return template;
  return { ...template, workspace: { ...template.workspace, ...asked } };
}
