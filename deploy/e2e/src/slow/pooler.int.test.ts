import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoredEvent } from '@svc/protocol';
import { expectEverythingOnceInOrder, startLoad, unexpectedFailures } from '../load.js';
import { controlClient } from '../sidecar-process.js';
import { startStack, type E2eStack } from '../stack.js';
import { bashRequest, postAsWorker } from '../worker-events.js';

const OWNER = 'pooler-user';
/** Fewer server connections than the services' clients (two event-ingest replicas, session, control): each takes turns. */
const SERVER_CONNECTIONS = 3;
/** How long the sidecars post through the pooler. */
const LOAD_MS = 4_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads the pooler's admin console (a query without parameters goes by the simple protocol, the only one it speaks). */
async function adminRows<T>(adminUrl: string, command: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query<T & pg.QueryResultRow>(command)).rows;
  } finally {
    await client.end();
  }
}

/**
 * docs/scale-out.md: a large deployment puts a pooler in front of PostgreSQL. Here every service's
 * work goes through a real PgBouncer in transaction mode with fewer server connections than the
 * services hold clients (so no statement may lean on its session), and the migrations go
 * straight to PostgreSQL on `SVC_DATABASE_MIGRATION_URL` (they hold a session-level lock).
 */
describe('every service through a transaction-mode PgBouncer, migrations straight to PostgreSQL', () => {
  let stack: E2eStack;
  let userToken: string;

  beforeAll(async () => {
    stack = await startStack({ ingestReplicas: 2, pooler: { poolMode: 'transaction', poolSize: SERVER_CONNECTIONS } });
    userToken = await stack.userToken(OWNER);
  }, 120_000);
  afterAll(() => stack?.stop());

  it('events from 10 sidecars, read by viewers and pollers: every one stored once, in order, ids contiguous; the pooler carried the work', async () => {
    const { pooler } = stack;
    if (!pooler) throw new Error('the stack was started without its pooler');
    const running = await startLoad(stack, { owner: OWNER, userToken, sidecars: 10, viewers: 2, pollers: 2, intervalMs: 50 });
    await sleep(LOAD_MS);
    await running.stopPosting();
    await expectEverythingOnceInOrder(stack, running);
    expect(unexpectedFailures(running)).toEqual([]);
    expect(running.sidecars.every((sidecar) => sidecar.accepted.length > 0)).toBe(true);

    const pools = await adminRows<{ database: string; pool_mode: string; sv_active: number; sv_idle: number; sv_used: number }>(pooler.adminUrl, 'SHOW POOLS');
    const pool = pools.find((row) => row.database === 'postgres')!;
    expect(pool.pool_mode).toBe('transaction');
    expect(pool.sv_active + pool.sv_idle + pool.sv_used).toBeLessThanOrEqual(SERVER_CONNECTIONS);
    const clients = await adminRows<{ database: string }>(pooler.adminUrl, 'SHOW CLIENTS');
    expect(clients.filter((client) => client.database === 'postgres').length).toBeGreaterThan(SERVER_CONNECTIONS);
    const stats = await adminRows<{ database: string; total_xact_count: string }>(pooler.adminUrl, 'SHOW STATS');
    expect(Number(stats.find((row) => row.database === 'postgres')!.total_xact_count)).toBeGreaterThan(100);
    expect(
      stack.processes().every((p) => p.running()),
      stack.outputs(),
    ).toBe(true);
  }, 180_000);

  it('an agent asks and a person decides: the decision is stored once, a second one is refused, the open list is empty again', async () => {
    const worker = await stack.createWorker(OWNER);
    const people = controlClient(stack.gatewayUrl, userToken);
    expect(await postAsWorker(stack.gatewayUrl, worker, [bashRequest('ask-1')])).toBe(202);
    const request = await people.oneOpenRequest(worker.worker_id);
    expect(request.data.request_id).toBe('ask-1');

    const decided = await people.decide(worker.worker_id, { request_id: 'ask-1', decision: 'allow' });
    expect(decided.status, await decided.clone().text()).toBe(201);
    const again = await people.decide(worker.worker_id, { request_id: 'ask-1', decision: 'deny' });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe('already_decided');

    expect(await people.openRequests(worker.worker_id)).toEqual([]);
    const responses = (await people.events(worker.worker_id)).filter((event): event is StoredEvent<'control_response'> => event.type === 'control_response');
    expect(responses.map((event) => [event.data.request_id, event.data.decision])).toEqual([['ask-1', 'allow']]);
  }, 60_000);
});
