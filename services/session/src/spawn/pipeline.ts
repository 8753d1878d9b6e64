import { isEndedStatus } from '@svc/protocol';
import { failSession, setSessionStatus } from '../session-status.js';
import type { Template } from '../templates/template.js';
import type { SkippedStep, SpawnContext, SpawnDeps, SpawnRequest, SpawnStep, StepDetails } from './spawn-step.js';
import { reportFailedStep, reportStep } from './step-events.js';
import { reportAllocated } from './steps/allocate-worker.js';
import { cloneRepository, cloneSkipped } from './steps/clone-repository.js';
import { createSandbox } from './steps/create-sandbox.js';
import { credentialProxy } from './steps/credential-proxy.js';
import { envAndFiles } from './steps/env-and-files.js';
import { finalize } from './steps/finalize.js';
import { prepareWorkspace } from './steps/prepare-workspace.js';
import { sidecarSteps } from './steps/sidecar.js';
import { sidecarSkipped, startAgent } from './steps/start-agent.js';
import { reportValidated } from './steps/validate.js';

// What the pipeline gives a worker's tunnels is also read here (spawn/pipeline.test.ts).
export { egressPolicyOf } from './worker-policy.js';

/** A step failed: where, and why (safe to show: never a token). */
class StepFailure extends Error {
  constructor(
    readonly step: string,
    readonly reason: string,
  ) {
    super(`${step}: ${reason}`);
  }
}

/** Steps 3 to 7 for a template, in order (docs/sessions.md "The spawn pipeline"). */
function stepsOf(template: Template): ReadonlyArray<SpawnStep | SkippedStep> {
  const deploy = template.sidecar === undefined ? [sidecarSkipped, startAgent] : sidecarSteps;
  return [createSandbox, prepareWorkspace, template.workspace ? cloneRepository : cloneSkipped, envAndFiles, credentialProxy, ...deploy, finalize];
}

/**
 * The spawn pipeline after the session exists (steps 1 validate and 2 allocate ran when it was
 * asked for, and are reported here): each step is named, logged and reported as a `system` event
 * of the worker (`subtype: "spawn_step"`). A failed step fails the session with the step and the
 * reason, and every step begun is undone, newest first (the sandbox; the token goes with the
 * failed session).
 */
export async function runSpawn(deps: SpawnDeps, request: SpawnRequest): Promise<void> {
  const { workerId, sessionId, template } = request;
  const log = deps.logger.child({ session_id: sessionId, worker_id: workerId, template: template.name });
  const spawn: SpawnContext = { deps, request, ids: { sessionId, workerId }, log, made: {} };
  const begun: SpawnStep[] = [];
  let current = 'validate';
  try {
    await reportValidated(spawn);
    await reportAllocated(spawn);
    await setSessionStatus(deps, spawn.ids, 'provisioning');
    for (const step of stepsOf(template)) {
      if ('skipped' in step) {
        await reportStep(spawn, step, Date.now(), 'skipped', { reason: step.skipped });
        continue;
      }
      current = step.name;
      begun.push(step);
      await runStep(spawn, step);
    }
  } catch (err) {
    await undoSpawn(spawn, begun, err instanceof StepFailure ? err : new StepFailure(current, (err as Error).message));
  }
}

/** One step, if the spawn is still wanted, then its `done` event. */
async function runStep(spawn: SpawnContext, step: SpawnStep): Promise<void> {
  // A stopping service does not hold its shutdown for a spawn (copying a sidecar binary can take
  // seconds): the session fails now, saying why, rather than when a watchdog notices.
  if (spawn.request.stopping?.aborted) {
    throw new StepFailure(step.name, 'spawn_interrupted: the session service stopped during the spawn; create the session again');
  }
  // A session deleted meanwhile (on any replica) has ended its worker: stop here and undo.
  const { status } = await spawn.deps.registry.get(spawn.ids.workerId);
  if (isEndedStatus(status)) throw new StepFailure(step.name, `the session was ${status} before this step`);
  const started = Date.now();
  let details: StepDetails | void;
  try {
    details = await step.run(spawn);
  } catch (err) {
    throw err instanceof StepFailure ? err : new StepFailure(step.name, (err as Error).message);
  }
  await reportStep(spawn, step, started, 'done', details ?? {});
}

/** Reports the failure, undoes the steps begun (newest first), and fails the session. */
async function undoSpawn(spawn: SpawnContext, begun: readonly SpawnStep[], failure: StepFailure): Promise<void> {
  const { log } = spawn;
  log.warn({ step: failure.step, reason: failure.reason }, 'spawn failed; undoing earlier steps');
  await reportFailedStep(spawn, failure);
  for (const step of [...begun].reverse()) {
    if (!step.undo) continue;
    const { what } = step.undo;
    await step.undo.run(spawn).catch((error: unknown) => log.error({ err: error, what }, 'could not undo a spawn step'));
  }
  await failSession(spawn.deps, spawn.ids, { step: failure.step, reason: failure.reason }).catch((error: unknown) =>
    log.error({ err: error }, 'could not mark the session failed'),
  );
}
