import type { IncomingMessage } from 'node:http';
import { createWorkerTokenVerifier, type WorkerDirectory } from '@svc/auth';
import { isEndedStatus, type WorkerRecord } from '@svc/protocol';

/** Who asks for a tunnel: the worker whose token the CONNECT carries, or why it may not ask (answered `401`). */
export type TunnelAuthentication = (request: IncomingMessage) => Promise<WorkerRecord | string>;

/**
 * The worker token on a CONNECT, as the sidecar sends it (`Authorization: Bearer`), or as a proxy
 * client does (`Proxy-Authorization`), with `x-svc-worker-id`. The agent holds the same token, so
 * this says which worker asks, never that the sidecar does; an ended worker's token is revoked.
 */
export function createTunnelAuthentication(workers: WorkerDirectory): TunnelAuthentication {
  // One verifier for every tunnel: a sidecar presents the same token each time.
  const tokens = createWorkerTokenVerifier();
  return async (request) => {
    const header = request.headers['authorization'] ?? request.headers['proxy-authorization'];
    const token = typeof header === 'string' ? /^Bearer (\S+)$/i.exec(header)?.[1] : undefined;
    const workerId = request.headers['x-svc-worker-id'];
    if (!token || typeof workerId !== 'string') return 'a tunnel needs the worker token (Authorization: Bearer) and x-svc-worker-id';
    const worker = await workers.get(workerId);
    if (!worker?.token_hash || !tokens.matches(token, worker.token_hash) || isEndedStatus(worker.status))
      return 'the worker token is not valid for this worker';
    return worker;
  };
}
