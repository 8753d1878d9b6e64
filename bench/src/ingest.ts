/**
 * bench/ingest (first figure of four): single-event `POST /v1/workers/{id}/sdk-events`, durable
 * (answered after the JetStream ack, stored by the real event-ingest into Postgres), against a
 * bare Fastify no-op POST with the same body, same client, same run. Every request carries a
 * fresh uid (autocannon's `[<id>]`), so nothing is a duplicate.
 *
 *   npm run build && node bench/dist/ingest.js [--seconds 10] [--connections 50] [--rounds 3]
 *
 * Still to come (issue 4): batched stored events/s vs a raw pg insert, POST → WebSocket latency
 * at 2,000 events/s over 100 workers, and 500 viewers of one worker.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { createLocalIssuer, createOidcVerifier } from '@svc/auth';
import { connectBus, ensureStreams, launchNatsServer, requestJson } from '@svc/bus';
import { start as startEventIngest } from '@svc/event-ingest';
import { buildGatewayApp, createWorkerDirectory } from '@svc/gateway';
import { subjects, type CreateWorkerResultType } from '@svc/protocol';
import { start as startSession } from '@svc/session';
import { createLogger } from '@svc/service-kit';
import { openDatabase } from '@svc/store';
import { startPostgres } from '@svc/test-support';
import { PINNED, pinServersToCpu0, runLoad, type LoadResult } from './load-client.js';

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' }, rounds: { type: 'string', default: '3' } } });
const BODY = JSON.stringify({ type: 'system', uid: 'bench:[<id>]', ts: '2026-11-22T07:00:00.000Z', data: { level: 'info', message: 'benchmark event' } });
const autocannon = (url: string, token: string) =>
  runLoad(url, { seconds: args.seconds, connections: args.connections, method: 'POST', body: BODY, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });

async function main() {
  pinServersToCpu0();
  const logger = createLogger({ name: 'bench', level: 'info', file: '/dev/null' });
  const bare = Fastify();
  bare.post('/noop', async (_request, reply) => reply.code(202).send({ accepted: 1 }));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  const nats = await launchNatsServer();
  const postgres = await startPostgres({ durable: true });
  const nc = await connectBus({ servers: nats.url, name: 'bench', logger });
  await ensureStreams(nc);
  const database = await openDatabase({ url: postgres.url });
  const ingest = await startEventIngest({ nc, db: database.db, logger, instance: 'bench', replicaIndex: 0, replicaCount: 1 });
  const session = await startSession({ nc, logger, instance: 'bench' });
  const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-'));
  const issuer = await createLocalIssuer({ stateDir, issuer: 'http://127.0.0.1:1' });
  const workers = await createWorkerDirectory(nc, logger);
  const gateway = await buildGatewayApp({
    nc,
    logger,
    instance: 'bench',
    settings: { trustedProxies: [], corsOrigins: [], rateLimitMax: 1_000_000_000, rateLimitWindowMs: 60_000, bodyLimitBytes: 4 * 1024 * 1024, oidcAudience: 'svc' },
    users: createOidcVerifier({ issuer: issuer.issuer, audience: 'svc', keys: issuer.jwks() }),
    workers,
  });
  const gatewayUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  const worker = await requestJson<CreateWorkerResultType>(nc, subjects.rpc.createWorker, { owner: 'bench' });

  const target = `${gatewayUrl}/v1/workers/${worker.worker_id}/sdk-events`;
  await autocannon(`${bareUrl}/noop`, worker.token);
  await autocannon(target, worker.token);
  const rounds: Array<{ bare: LoadResult; post: LoadResult }> = [];
  for (let round = 0; round < Number(args.rounds); round++) rounds.push({ bare: await autocannon(`${bareUrl}/noop`, worker.token), post: await autocannon(target, worker.token) });
  const ratio = (r: { bare: LoadResult; post: LoadResult }) => r.post.requests.average / r.bare.requests.average;
  const median = [...rounds].sort((a, b) => ratio(a) - ratio(b))[Math.floor(rounds.length / 2)]!;

  const row = (name: string, r: LoadResult) => ({ route: name, 'req/s': Math.round(r.requests.average), 'p50 ms': r.latency.p50, 'p99 ms': r.latency.p99, 'non-2xx': r.non2xx });
  process.stdout.write(`ingest (single-event POST): ${args.seconds}s per run, ${args.connections} connections, median of ${args.rounds} rounds${PINNED ? ', server CPU 0, client CPU 1' : ''}\n`);
  process.stdout.write(`ratios per round: ${rounds.map((r) => ratio(r).toFixed(2)).join(', ')}\n`);
  console.table([row('bare Fastify POST /noop', median.bare), row('POST sdk-events (durable, stored)', median.post)]);
  process.stdout.write(`ratio (durable POST / bare POST): ${ratio(median).toFixed(2)}\n`);

  await gateway.close();
  await workers.stop();
  await session.stop();
  await ingest.stop();
  await database.close();
  await bare.close();
  await nc.close();
  await Promise.all([nats.stop(), postgres.stop()]);
  await rm(stateDir, { recursive: true, force: true });
}

await main();
