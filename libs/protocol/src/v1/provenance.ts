import Type from 'typebox';
import type { EventData } from './events.js';
import type { IncomingEvent } from './envelope.js';
import type { FieldError } from './validation.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/**
 * Provenance (docs/protocol.md, "Sources"): who wrote a stored event, set by the server from the
 * authenticated principal, never taken from the event's body.
 * - `worker`: the worker's sidecar posted it (the agent's output, the sidecar's own lifecycle);
 * - `worker:policy`: a decision of the worker's own permission engine (its lists, autonomous mode);
 * - `user:<channel>:<sub>`: a person, through a channel (`api`, `cli`, `console`, `link`);
 * - `policy`: the control plane's policy (a deadline's `on_timeout`, a template's egress rules);
 * - `svc:<component>`: a control-plane component (the model proxy, the egress proxy, the spawn
 *   pipeline).
 * Events stored before sources existed have none and are read as the worker's.
 */
export type EventSource = 'worker' | 'worker:policy' | 'policy' | `svc:${ComponentName}` | `user:${PersonChannel}:${string}`;

/** The control-plane components that write events of their own. */
const COMPONENT_NAMES = ['model-proxy', 'egress', 'spawn', 'git', 'workspace', 'approvals'] as const;
export type ComponentName = (typeof COMPONENT_NAMES)[number];

/** The channels through which a person decides (a subset of the audit trail's channels). */
export const PERSON_CHANNELS = ['api', 'cli', 'console', 'link'] as const;
export type PersonChannel = (typeof PERSON_CHANNELS)[number];

export const WORKER_SOURCE = 'worker' satisfies EventSource;
export const WORKER_POLICY_SOURCE = 'worker:policy' satisfies EventSource;
export const POLICY_SOURCE = 'policy' satisfies EventSource;

export const EventSourceSchema = Type.String({
  pattern: `^(worker|worker:policy|policy|svc:(${COMPONENT_NAMES.join('|')})|user:(${PERSON_CHANNELS.join('|')}):[^\\s]{1,256})$`,
  description:
    "Who wrote the event, set by the server: `worker` (its sidecar), `worker:policy` (the worker's own permission engine), `user:<channel>:<sub>` (a person), `policy` (the control plane's policy: deadlines, egress rules) or `svc:<component>`.",
  examples: ['worker', 'user:console:alice'],
});

/** The source of a person's event. */
export function personSource(channel: PersonChannel, sub: string): EventSource {
  return `user:${channel}:${sub}`;
}

/** The source of a control-plane component's event. */
export function componentSource(component: ComponentName): EventSource {
  return `svc:${component}`;
}

/** A source read apart: who, and for a person through which channel. */
export type ParsedSource =
  { kind: 'worker' | 'worker_policy' | 'policy' } | { kind: 'component'; component: ComponentName } | { kind: 'person'; channel: PersonChannel; sub: string };

/** Reads a stored source; none (an event stored before sources existed) is the worker's. */
export function parseSource(source: string | undefined): ParsedSource {
  if (source === undefined || source === WORKER_SOURCE) return { kind: 'worker' };
  if (source === WORKER_POLICY_SOURCE) return { kind: 'worker_policy' };
  if (source === POLICY_SOURCE) return { kind: 'policy' };
  if (source.startsWith('svc:')) return { kind: 'component', component: source.slice(4) as ComponentName };
  const person = /^user:([a-z]+):(.+)$/s.exec(source);
  if (person) return { kind: 'person', channel: person[1] as PersonChannel, sub: person[2]! };
  // Unknown to this reader (a newer writer's): trusted no more than the worker.
  return { kind: 'worker' };
}

/**
 * Uid namespaces the control plane writes in (`control_response:<request>` for every decision on a
 * request, `egress:…`, `interrupt:…` and `message:…` for a person's, `git:…` and `workspace:…` for the workspace's, `model-proxy:…`, `spawn:…`, `svc:…`). A worker's event may not take one: the store
 * keeps one event per uid, so a worker that took a decision's uid first would decide in a
 * person's place.
 */
const RESERVED_UID_NAMESPACES = ['control_response', 'egress', 'git', 'interrupt', 'message', 'model-proxy', 'spawn', 'svc', 'terminal', 'workspace'] as const;

/** `system` subtypes only the control plane writes: a worker's event may not claim one. */
const CONTROL_PLANE_SUBTYPES: ReadonlySet<string> = new Set([
  SYSTEM_SUBTYPES.spawnStep,
  SYSTEM_SUBTYPES.templateWarning,
  SYSTEM_SUBTYPES.egress,
  SYSTEM_SUBTYPES.modelAnswerReplayed,
  SYSTEM_SUBTYPES.modelBudgetExhausted,
  SYSTEM_SUBTYPES.modelUpstreamFailed,
  SYSTEM_SUBTYPES.modelRequestRefused,
  SYSTEM_SUBTYPES.personMessage,
  SYSTEM_SUBTYPES.personInterrupt,
  SYSTEM_SUBTYPES.gitPush,
  SYSTEM_SUBTYPES.workspaceChanges,
  SYSTEM_SUBTYPES.workspacePushed,
  SYSTEM_SUBTYPES.terminalRequested,
  SYSTEM_SUBTYPES.changesRequested,
]);

/** What a worker's own permission engine writes as `decided_by` (the sidecar's policy answers). */
const WORKER_POLICY_DECIDER = 'policy';

/**
 * What a worker may not post (`POST …/sdk-events` with its token): only what an agent and its
 * sidecar produce. A decision must be its own policy's, for this call only (`scope` "always" and
 * `input_pattern` make rules, which only a person may); a uid in a reserved namespace, a
 * control-plane `system` subtype and progress claimed as the model proxy's are refused.
 * Returns the failing fields (empty: allowed), under `prefix`.
 */
export function workerEventViolations(event: IncomingEvent, prefix: string): FieldError[] {
  const errors: FieldError[] = [];
  const namespace = event.uid.includes(':') ? event.uid.slice(0, event.uid.indexOf(':')) : undefined;
  if (namespace !== undefined && (RESERVED_UID_NAMESPACES as readonly string[]).includes(namespace))
    errors.push({ field: `${prefix}/uid`, message: `is in the control plane's "${namespace}:" namespace, which a worker may not write in` });
  if (event.type === 'control_response') {
    const data = event.data as EventData<'control_response'>;
    if (data.decided_by !== WORKER_POLICY_DECIDER)
      errors.push({
        field: `${prefix}/data/decided_by`,
        message: `must be "${WORKER_POLICY_DECIDER}": a worker posts its own policy's decisions only; people decide through POST /v1/workers/{id}/control`,
      });
    if (data.scope === 'always') errors.push({ field: `${prefix}/data/scope`, message: 'must not be "always": only a person adds rules' });
    if (data.input_pattern !== undefined) errors.push({ field: `${prefix}/data/input_pattern`, message: 'is not allowed: only a person adds rules' });
    for (const claimed of ['decided_by_name', 'decided_by_email'] as const)
      if (data[claimed] !== undefined) errors.push({ field: `${prefix}/data/${claimed}`, message: 'is not allowed: it names a person' });
  }
  if (event.type === 'system') {
    const subtype = (event.data as EventData<'system'>).subtype;
    if (subtype !== undefined && CONTROL_PLANE_SUBTYPES.has(subtype))
      errors.push({ field: `${prefix}/data/subtype`, message: `"${subtype}" is written by the control plane only` });
  }
  if (event.type === 'progress' && (event.data as EventData<'progress'>).measured_by === 'model_proxy')
    errors.push({ field: `${prefix}/data/measured_by`, message: 'must not be "model_proxy": only the model proxy measures its own traffic' });
  return errors;
}

/**
 * Who decided, read from a stored decision's source rather than from its data: a person's `sub`;
 * `policy` for the worker's own permission engine; the control plane's policy by the name it wrote
 * (`policy:timeout`). A decision with any other source decided nothing a person should trust: `worker`.
 */
export function decidedByOf(decision: { source?: string | undefined; data: Pick<EventData<'control_response'>, 'decided_by'> }): string {
  const source = parseSource(decision.source);
  switch (source.kind) {
    case 'person':
      return source.sub;
    case 'worker_policy':
      return WORKER_POLICY_DECIDER;
    case 'policy':
      return decision.data.decided_by;
    default:
      return WORKER_SOURCE;
  }
}
