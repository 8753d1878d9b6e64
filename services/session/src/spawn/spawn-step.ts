import type { CreateSessionBodyType, EventData, SidecarConfig } from '@svc/protocol';
import type { GitCredentials, Logger } from '@svc/service-kit';
import type { Sandbox, SandboxProvider } from '../sandbox/provider.js';
import type { SessionStore } from '../session-store.js';
import type { SessionIds } from '../session-status.js';
import type { Template } from '../templates/template.js';
import type { WorkerRegistry } from '../worker-registry.js';

export interface SpawnDeps {
  provider: SandboxProvider;
  registry: WorkerRegistry;
  store: SessionStore;
  /** Reports a `system` event of the worker (durably, in order). */
  emit(workerId: string, uid: string, data: EventData<'system'>): Promise<void>;
  /** The svc-sidecar single executable per target, e.g. `{'linux/amd64': '/opt/svc/svc-sidecar'}`. */
  sidecarBinaries: Readonly<Record<string, string>>;
  /** The gateway's address as a sandbox reaches it. */
  controlPlaneUrl: string;
  /** How long each of the sidecar's control channel polls waits (under the liveness deadline). */
  decisionWaitMs: number;
  /** The variables a template's `pass_env` may copy (the session service's environment). */
  hostEnv: Readonly<Record<string, string | undefined>>;
  /** How long a sandbox's programs get between SIGTERM and SIGKILL when it is torn down. */
  killGraceMs: number;
  /** The PATH every sandboxed program starts with. */
  sandboxPath: string;
  /** The tokens the control plane holds for git hosts (step 4.5 clones with them; none enters a sandbox). */
  gitCredentials: GitCredentials;
  logger: Logger;
}

export interface SpawnRequest {
  sessionId: string;
  workerId: string;
  token: string;
  template: Template;
  body: CreateSessionBodyType;
  /** Aborted when this session service stops: the spawn ends at its next step, failed, and undone. */
  stopping?: AbortSignal;
}

/** What the steps made so far: each step reads what earlier ones left here, and an undo finds what to take back. */
export interface SpawnMade {
  /** Step 3. */
  sandbox?: Sandbox;
  /** Step 4.5: the commit the work starts from. */
  baseCommit?: string;
  /** Step 5: the agent's environment. */
  agentEnv?: Record<string, string>;
  /** Step 6.5.1: the sidecar executable to upload. */
  sidecarBinary?: string;
  /** Step 6.5.4. */
  sidecarConfig?: SidecarConfig;
}

/** One spawn under way, as its steps see it. */
export interface SpawnContext {
  readonly deps: SpawnDeps;
  readonly request: SpawnRequest;
  readonly ids: Required<SessionIds>;
  /** The spawn's logger (session, worker and template in every line). */
  readonly log: Logger;
  readonly made: SpawnMade;
}

/** What a step's `done` event says besides its name and time (never a token). */
export type StepDetails = Record<string, unknown>;

/**
 * One named step of the spawn pipeline (docs/sessions.md "The spawn pipeline"). The pipeline
 * runs the steps in order, reports each as a `spawn_step` event, and on a failure undoes, newest
 * first, every step begun.
 */
export interface SpawnStep {
  /** Its number in the spec (`6.5.1`). */
  readonly number: string;
  /** Its name in its events and in the session's `failure.step`. */
  readonly name: string;
  /** Does the step; what it returns goes into its `done` event. */
  run(spawn: SpawnContext): Promise<StepDetails | void>;
  /** Takes back what `run` made; also runs when `run` itself failed, so it undoes only what `spawn.made` holds. */
  undo?: { what: string; run(spawn: SpawnContext): Promise<void> };
}

/** A step this spawn passes by, reported `skipped` with why (6.5 `sidecar` for a template without one). */
export interface SkippedStep {
  readonly number: string;
  readonly name: string;
  readonly skipped: string;
}

/** What an earlier step made: a step that runs without it is a pipeline in the wrong order. */
export function madeBefore<K extends keyof SpawnMade>(spawn: SpawnContext, what: K): NonNullable<SpawnMade[K]> {
  const made = spawn.made[what];
  if (made === undefined) throw new Error(`the spawn has no ${what}: the step that makes it has not run`);
  return made as NonNullable<SpawnMade[K]>;
}
