import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { generateWorkerToken, hashWorkerToken, type WorkerDirectory } from '@svc/auth';
import type { WorkerRecord } from '@svc/protocol';
import { createTunnelAuthentication } from './tunnel-authentication.js';

/** A directory from a table: the record lookup is all a CONNECT's authentication asks of it. */
function tableDirectory(records: readonly WorkerRecord[]): WorkerDirectory {
  const byId = new Map(records.map((record) => [record.worker_id, record]));
  const unused = () => {
    throw new Error('not used by tunnel authentication');
  };
  return { get: async (workerId) => byId.get(workerId), known: unused, checkWorkerToken: unused, all: unused, stop: unused };
}

const connectWith = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

describe('egress tunnel authentication — the worker token on a CONNECT says which worker asks', () => {
  const token = generateWorkerToken();
  const otherToken = generateWorkerToken();
  const record = (worker_id: string, status: WorkerRecord['status'], token_hash?: string): WorkerRecord => ({
    worker_id,
    owner: 'alice',
    status,
    ...(token_hash ? { token_hash } : {}),
    updated_at: new Date().toISOString(),
  });
  const authenticate = createTunnelAuthentication(
    tableDirectory([
      record('wrk_running', 'running', hashWorkerToken(token)),
      record('wrk_other', 'running', hashWorkerToken(otherToken)),
      record('wrk_ended', 'completed', hashWorkerToken(token)),
      record('wrk_tokenless', 'running'),
    ]),
  );
  const invalid = 'the worker token is not valid for this worker';
  const missing = 'a tunnel needs the worker token (Authorization: Bearer) and x-svc-worker-id';

  it('the token as Authorization (the sidecar) or Proxy-Authorization (a proxy client), any case of "Bearer": the worker', async () => {
    const headers: Record<string, string>[] = [
      { authorization: `Bearer ${token}` },
      { 'proxy-authorization': `Bearer ${token}` },
      { authorization: `bearer ${token}` },
    ];
    for (const header of headers) {
      const worker = await authenticate(connectWith({ ...header, 'x-svc-worker-id': 'wrk_running' }));
      expect(worker).toMatchObject({ worker_id: 'wrk_running' });
    }
  });

  it('no token, another scheme, or no worker id: refused, saying what a tunnel needs', async () => {
    expect(await authenticate(connectWith({ 'x-svc-worker-id': 'wrk_running' }))).toBe(missing);
    expect(await authenticate(connectWith({ authorization: `Basic ${token}`, 'x-svc-worker-id': 'wrk_running' }))).toBe(missing);
    expect(await authenticate(connectWith({ authorization: `Bearer ${token}` }))).toBe(missing);
  });

  it("another worker's token, an unknown worker, a worker without a token, an ended worker: refused alike", async () => {
    expect(await authenticate(connectWith({ authorization: `Bearer ${otherToken}`, 'x-svc-worker-id': 'wrk_running' }))).toBe(invalid);
    expect(await authenticate(connectWith({ authorization: `Bearer ${token}`, 'x-svc-worker-id': 'wrk_unknown' }))).toBe(invalid);
    expect(await authenticate(connectWith({ authorization: `Bearer ${token}`, 'x-svc-worker-id': 'wrk_tokenless' }))).toBe(invalid);
    expect(await authenticate(connectWith({ authorization: `Bearer ${token}`, 'x-svc-worker-id': 'wrk_ended' }))).toBe(invalid);
  });
});
