import type { Worker, WorkerActivity } from '@svc/protocol';

/** The activities in which a worker's agent waits for its person: a decision, or a message (docs/conversations.md, "Activity"). */
export const WAITING_ACTIVITIES: ReadonlySet<WorkerActivity | undefined> = new Set<WorkerActivity>(['waiting_for_decision', 'idle', 'suspended']);

/** Orders workers by when their activity last changed, the newest first (one that never reported any last). */
export function newestActivityFirst(a: Pick<Worker, 'activity_at'>, b: Pick<Worker, 'activity_at'>): number {
  const changedAt = (worker: Pick<Worker, 'activity_at'>) => (worker.activity_at ? Date.parse(worker.activity_at) : 0);
  return changedAt(b) - changedAt(a);
}
