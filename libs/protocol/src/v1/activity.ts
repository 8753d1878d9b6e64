import Type from 'typebox';
import type { EventData } from './events.js';
import type { StoredEvent } from './envelope.js';
import { SYSTEM_SUBTYPES } from './system-subtypes.js';

/**
 * What a worker's agent is doing (docs/conversations.md, "Activity"): `working` on a turn,
 * `waiting_for_decision` (a request of its turn waits for a person), `idle` (its turn ended; it
 * waits for a message), `suspended` (stopped while idle, or crashed; a message resumes it).
 */
const WORKER_ACTIVITIES = ['working', 'waiting_for_decision', 'idle', 'suspended'] as const;
export type WorkerActivity = (typeof WORKER_ACTIVITIES)[number];
export const WorkerActivitySchema = Type.Enum(WORKER_ACTIVITIES, {
  description: '`working`, `waiting_for_decision` (a person is asked), `idle` (waiting for a message) or `suspended` (stopped; a message resumes it).',
});

/** The sidecar's `system` event that the agent's activity changed. */
export function activityData(activity: WorkerActivity, why: string): EventData<'system'> {
  return { level: 'info', message: `the agent is ${activity.replaceAll('_', ' ')}: ${why}`, subtype: SYSTEM_SUBTYPES.activity, details: { activity } };
}

/** The activity a stored event reports, when it is the sidecar's activity event. */
export function activityOf(event: Pick<StoredEvent, 'type' | 'data'>): WorkerActivity | undefined {
  if (event.type !== 'system') return undefined;
  const data = event.data as EventData<'system'>;
  if (data.subtype !== SYSTEM_SUBTYPES.activity) return undefined;
  const activity = data.details?.['activity'];
  return (WORKER_ACTIVITIES as readonly unknown[]).includes(activity) ? (activity as WorkerActivity) : undefined;
}
