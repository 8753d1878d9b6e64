import { CodedError, type CreateSessionBodyType, type CallerType } from '@svc/protocol';
import type { Template } from './template.js';

/**
 * Refuses the overrides of a session request that the template does not let this person make
 * (docs/sessions.md "Overrides"), with `forbidden` (403) naming the template and the key. Only an
 * override that loosens the template is weighed: turning autonomous mode on for a template that
 * is not autonomous (nobody would be asked, and every egress tunnel nothing denies would open).
 * Turning it off, or naming what the template already says, is anyone's.
 */
export function checkOverrides(template: Template, body: CreateSessionBodyType, caller: Pick<CallerType, 'admin'>): void {
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
