import { LIFECYCLE_SUBTYPES } from '@svc/protocol';
import { histogram } from '@svc/service-kit';
import type { SpawnContext, StepDetails } from './spawn-step.js';

const spawnStepSeconds = histogram({
  name: 'svc_spawn_step_duration_seconds',
  help: 'How long each step of the spawn pipeline took (docs/sessions.md), by step and whether it was done or skipped.',
  labelNames: ['step', 'status'],
  buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
});

/** A step's outcome: logged, measured, and stored as the worker's `spawn_step` event, so a viewer watches the spawn. */
export async function reportStep(
  spawn: SpawnContext,
  step: { number: string; name: string },
  started: number,
  status: 'done' | 'skipped',
  extra: StepDetails = {},
): Promise<void> {
  const { number, name } = step;
  const durationMs = Date.now() - started;
  spawnStepSeconds.observe({ step: name, status }, durationMs / 1000);
  spawn.log.info({ step: name, number, durationMs, ...extra }, `spawn step ${number} ${name}: ${status}`);
  await spawn.deps.emit(spawn.ids.workerId, `spawn:${name}`, {
    level: 'info',
    subtype: LIFECYCLE_SUBTYPES.spawnStep,
    message: `spawn step ${number} ${name}: ${status} (${durationMs} ms)`,
    details: { step: name, number, status, duration_ms: durationMs, ...extra },
  });
}

/** A failed step's event; one that cannot be sent is only logged (the session's `failure` says it too). */
export async function reportFailedStep(spawn: SpawnContext, failure: { step: string; reason: string }): Promise<void> {
  await spawn.deps
    .emit(spawn.ids.workerId, `spawn:${failure.step}:failed`, {
      level: 'error',
      subtype: LIFECYCLE_SUBTYPES.spawnStep,
      message: `spawn step ${failure.step} failed: ${failure.reason}`,
      details: { step: failure.step, status: 'failed', reason: failure.reason },
    })
    .catch((error: unknown) => spawn.log.warn({ err: error }, 'could not report the failed step'));
}
