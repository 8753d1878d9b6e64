import { CodedError, SYSTEM_SUBTYPES, type CreateSessionBodyType, type CallerType } from '@svc/protocol';
import type { Database, Kysely } from '@svc/store';
import type { SessionConfig } from '../../config.js';
import type { SandboxProvider } from '../../sandbox/provider.js';
import { checkSessionCap } from '../../session-caps.js';
import type { TemplateCatalog } from '../../templates/catalog.js';
import { checkOverrides, withWorkspaceOverrides } from '../../templates/overrides.js';
import type { Template } from '../../templates/template.js';
import type { SpawnContext } from '../spawn-step.js';
import { reportStep } from '../step-events.js';

export interface ValidateDeps {
  db: Kysely<Database>;
  config: Pick<SessionConfig, 'maxRunningSessionsPerUser' | 'sandboxAllowUnsealed'>;
  templates: TemplateCatalog;
  provider: Pick<SandboxProvider, 'seals'>;
  hostEnv: Readonly<Record<string, string | undefined>>;
}

/**
 * Step 1, while the session is asked for: nothing is made for a request or template that cannot
 * spawn, or past the person's cap. Refusals are the caller's errors (400, 403, 429); the template
 * to spawn is returned.
 */
export async function validateRequest(deps: ValidateDeps, caller: CallerType, body: CreateSessionBodyType): Promise<Template> {
  await checkSessionCap(deps.db, caller, deps.config.maxRunningSessionsPerUser);
  const template = await deps.templates.load(body.template);
  checkOverrides(template, body, caller);
  validateSpawn(template, body, deps.hostEnv, { seals: deps.provider.seals, allowUnsealed: deps.config.sandboxAllowUnsealed });
  // From here on the session runs the template as overridden: its worker, clone and sidecar see one workspace.
  return withWorkspaceOverrides(template, body);
}

/** Checks a template against a request before anything is made: a refusal is `400`. */
function validateSpawn(
  template: Template,
  body: CreateSessionBodyType,
  hostEnv: Readonly<Record<string, string | undefined>>,
  sandboxes: { seals: boolean; allowUnsealed: boolean },
): void {
  if (template.sandbox.sealed && !sandboxes.seals && !sandboxes.allowUnsealed) {
    throw new CodedError(
      'invalid_template',
      `${template.source}: the template asks for a sealed sandbox ([sandbox] sealed = true, the default), and this session service cannot seal one (local sandboxes without bubblewrap are plain processes with this machine's network): install bubblewrap, or let the operator set SVC_SANDBOX_ALLOW_UNSEALED=true`,
      { file: template.source },
    );
  }
  if (body.overrides?.budget && !template.model) {
    throw new CodedError('invalid_request', `template ${template.name} names no model API ([model]), so svc meters nothing a budget could cap`);
  }
  const missing = template.agent.pass_env.filter((name) => !hostEnv[name]);
  if (missing.length > 0) {
    throw new CodedError('invalid_template', `${template.source}: /agent/pass_env needs ${missing.join(', ')} set in the session service's environment`, {
      file: template.source,
      missing,
    });
  }
  if (template.sidecar === undefined && body.prompt !== undefined) {
    throw new CodedError('invalid_request', `template ${template.name} has no [sidecar] section, so nothing would give the agent a prompt`);
  }
}

/** Step 1's events, once the worker exists to hold them: the step done, then each of the template's warnings. */
export async function reportValidated(spawn: SpawnContext): Promise<void> {
  const { template } = spawn.request;
  await reportStep(spawn, { number: '1', name: 'validate' }, Date.now(), 'done', { template: template.name, source: template.source });
  for (const [index, warning] of template.warnings.entries()) {
    spawn.log.warn({ template: template.name }, warning);
    await spawn.deps.emit(spawn.ids.workerId, `spawn:validate:warning:${index}`, {
      level: 'warn',
      subtype: SYSTEM_SUBTYPES.templateWarning,
      message: warning,
    });
  }
}
