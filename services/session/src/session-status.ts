import { CodedError, type WorkerStatus } from '@svc/protocol';
import type { SessionStore } from './session-store.js';
import type { WorkerRegistry } from './worker-registry.js';

export interface StatusDeps {
  registry: WorkerRegistry;
  store: SessionStore;
}

/** A worker, and its session when it has one (a worker made without a session has none). */
export interface SessionIds {
  workerId: string;
  sessionId?: string | undefined;
}

export interface Failure {
  step: string;
  reason: string;
}

/**
 * The one writer of a session's status, used by the spawn pipeline, the lifecycle and the delete
 * path: the worker's record first (the KV record the gateway checks; compare-and-set, and it never
 * leaves an ended status, so the first end wins across replicas), then the session's row. False,
 * changing nothing, when the worker had already ended.
 */
export async function setSessionStatus(deps: StatusDeps, ids: SessionIds, status: WorkerStatus, failure?: Failure): Promise<boolean> {
  try {
    await deps.registry.setStatus(ids.workerId, status);
  } catch (err) {
    if (err instanceof CodedError && err.code === 'worker_ended') return false;
    throw err;
  }
  if (ids.sessionId !== undefined) await deps.store.setStatus(ids.sessionId, status, failure);
  return true;
}

/** Ends a session (`completed`, `failed` with where and why, `stopped`) and refuses its token from now on; false if it had ended already. */
export async function endSession(deps: StatusDeps, ids: SessionIds, status: 'completed' | 'failed' | 'stopped', failure?: Failure): Promise<boolean> {
  if (!(await setSessionStatus(deps, ids, status, failure))) return false;
  await deps.registry.revoke(ids.workerId);
  return true;
}

/** Ends a session as `failed` with where and why. */
export async function failSession(deps: StatusDeps, ids: SessionIds, failure: Failure): Promise<void> {
  await endSession(deps, ids, 'failed', failure);
}
