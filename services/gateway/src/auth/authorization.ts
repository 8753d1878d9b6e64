import type { FastifyRequest } from 'fastify';
import { canAccess, type WorkerDirectory } from '@svc/auth';
import { CodedError, type WorkerRecord } from '@svc/protocol';

/**
 * The worker a user route names, if this user may see it: its owner, or an admin. Anyone else
 * gets the same `404 worker_not_found` as for a worker that does not exist, so a worker's
 * existence is never revealed to someone who may not see it. A worker token may reach only its
 * own worker.
 */
export async function authorizeWorker(request: FastifyRequest, workers: WorkerDirectory, workerId: string): Promise<WorkerRecord> {
  const principal = request.principal;
  // Made only when thrown: an Error captures a stack, a cost no request that passes should pay.
  const notFound = () => new CodedError('worker_not_found', `worker ${workerId} does not exist`);
  if (!principal) throw new CodedError('unauthorized', 'authentication is required');
  const record = await workers.get(workerId);
  if (!record) throw notFound();
  if (principal.kind === 'worker') {
    if (principal.workerId !== workerId) throw new CodedError('forbidden', 'a worker token reaches only its own worker');
    return record;
  }
  if (!canAccess(principal, record.owner)) throw notFound();
  return record;
}
