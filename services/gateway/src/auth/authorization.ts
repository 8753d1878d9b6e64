import type { FastifyRequest } from 'fastify';
import type { WorkerDirectory } from '@svc/auth';
import { CodedError, roleIncludes, roleRequiredError, workerRoleOf, type AccessRole, type WorkerRecord } from '@svc/protocol';

/**
 * The worker a user route names, if this user may see it, and may do what `needed` allows
 * (docs/teams.md): its owner and admins may do everything; the people its session's access list
 * names may do what their role allows (`403 role_required` beyond it), and those its approval
 * routes name may see it. Anyone else gets the same
 * `404 worker_not_found` as for a worker that does not exist, so a worker's existence is never
 * revealed to someone who may not see it. A worker token may reach only its own worker.
 */
export async function authorizeWorker(
  request: FastifyRequest,
  workers: WorkerDirectory,
  workerId: string,
  needed: AccessRole = 'viewer',
): Promise<WorkerRecord> {
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
  const role = workerRoleOf(principal, record);
  if (!role) throw notFound();
  if (!roleIncludes(role, needed)) throw roleRequiredError(role, needed, `worker ${workerId}`);
  return record;
}
