/**
 * bench/gateway-baseline: requests per second of a bare Fastify no-op route and of an
 * authenticated no-op route through the gateway's full middleware chain (request id, client IP,
 * logging, error mapping, CORS, JWT authentication, rate limiting), in the same run, both
 * driven by the same autocannon client in a separate process.
 *
 *   npm run build && node bench/dist/gateway-baseline.js [--seconds 10] [--connections 50] [--rounds 3] [--log-level info]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import { createLocalIssuer, createOidcVerifier, createWorkerDirectory } from '@svc/auth';
import { connectBus, natsAuthorization } from '@svc/bus';
import { launchNatsServer } from '@svc/nats-server';
import { buildGatewayApp } from '@svc/gateway';
import { createLogger } from '@svc/service-kit';
import { PINNED, pinServersToCpu0, runLoad, type LoadResult } from './load-client.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    rounds: { type: 'string', default: '3' },
    'log-level': { type: 'string', default: 'info' },
  },
});
const autocannon = (url: string, headers: Record<string, string> = {}) => runLoad(url, { seconds: args.seconds, connections: args.connections, headers });

async function main() {
  pinServersToCpu0();
  // Request logging stays on by default (one info line per request, as in production), to /dev/null.
  const logger = createLogger({ name: 'bench', level: args['log-level'], file: '/dev/null' });

  const bare = Fastify();
  bare.get('/noop', async () => ({ ok: true }));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });

  const nats = await launchNatsServer({ authorization: natsAuthorization() });
  const nc = await connectBus({ servers: nats.url, name: 'bench', logger, credentials: nats.credentials.operator });
  const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-bench-'));
  const issuer = await createLocalIssuer({ stateDir, issuer: 'http://127.0.0.1:1' });
  const users = createOidcVerifier({ issuer: issuer.issuer, audience: 'svc', keys: issuer.jwks() });
  const workers = await createWorkerDirectory(nc, logger);
  const gateway = await buildGatewayApp({
    nc,
    logger,
    instance: 'bench',
    settings: { trustedProxies: [], corsOrigins: [], rateLimitMax: 1_000_000_000, rateLimitWindowMs: 60_000, bodyLimitBytes: 1024 * 1024, oidcAudience: 'svc' },
    users,
    workers,
    routes: [
      async (app) => {
        app.get('/v1/bench/noop', async () => ({ ok: true }));
        app.get('/v1/bench/public', { config: { auth: 'public' } }, async () => ({ ok: true }));
      },
    ],
  });
  const gatewayUrl = await gateway.listen({ host: '127.0.0.1', port: 0 });
  const token = await issuer.mintUserToken({ sub: 'bench-user', audience: 'svc' });

  // Warm both up, then measure alternately.
  // The bare route gets the same Authorization header (and ignores it), so the client does the
  // same work in both runs and only the server side differs.
  const authorization = { authorization: `Bearer ${token}` };
  await autocannon(`${bareUrl}/noop`, authorization);
  await autocannon(`${gatewayUrl}/v1/bench/noop`, { authorization: `Bearer ${token}` });
  const rounds: Array<{ bare: LoadResult; chain: LoadResult; public: LoadResult }> = [];
  for (let round = 0; round < Number(args.rounds); round++) {
    rounds.push({
      bare: await autocannon(`${bareUrl}/noop`, authorization),
      chain: await autocannon(`${gatewayUrl}/v1/bench/noop`, { authorization: `Bearer ${token}` }),
      public: await autocannon(`${gatewayUrl}/v1/bench/public`),
    });
  }
  // The round with the median full-chain/bare ratio counts.
  const byRatio = [...rounds].sort((a, b) => a.chain.requests.average / a.bare.requests.average - b.chain.requests.average / b.bare.requests.average);
  const { bare: bareResult, chain: chainResult, public: publicResult } = byRatio[Math.floor(byRatio.length / 2)]!;

  const row = (name: string, r: LoadResult) => ({
    route: name,
    'req/s': Math.round(r.requests.average),
    'p50 ms': r.latency.p50,
    'p99 ms': r.latency.p99,
    'non-2xx': r.non2xx,
    errors: r.errors,
  });
  process.stdout.write(
    `gateway-baseline: ${args.seconds}s per run, ${args.connections} connections, median of ${args.rounds} alternating rounds, log level ${args['log-level']}, autocannon in its own process${PINNED ? ', server on CPU 0 and client on CPU 1' : ''}\n`,
  );
  process.stdout.write(`ratios per round: ${rounds.map((r) => (r.chain.requests.average / r.bare.requests.average).toFixed(2)).join(', ')}\n`);
  console.table([
    row('bare Fastify GET /noop', bareResult),
    row('gateway full chain, JWT', chainResult),
    row('gateway full chain, public route', publicResult),
  ]);
  process.stdout.write(`ratio (full chain / bare): ${(chainResult.requests.average / bareResult.requests.average).toFixed(2)}\n`);

  await gateway.close();
  await workers.stop();
  await bare.close();
  await nc.close();
  await nats.stop();
  await rm(stateDir, { recursive: true, force: true });
}

await main();
