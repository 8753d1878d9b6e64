import type { CreateWorkerResultType, IncomingEvent } from '@svc/protocol';

/** Posts events as the worker's sidecar does (its token, one batch, stamped now); answers the HTTP status (202 when accepted). */
export async function postAsWorker(gatewayUrl: string, worker: CreateWorkerResultType, events: Array<Omit<IncomingEvent, 'ts'>>): Promise<number> {
  const response = await fetch(`${gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${worker.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events: events.map((event) => ({ ...event, ts: new Date().toISOString() })) }),
  });
  await response.arrayBuffer();
  return response.status;
}

/** A Bash tool request, as an agent's sidecar posts it (`uid` from its id). */
export function bashRequest(requestId: string, command = 'npm test'): Omit<IncomingEvent, 'ts'> {
  return { type: 'control_request', uid: `request-${requestId}`, data: { request_id: requestId, tool_name: 'Bash', input: { command } } };
}
