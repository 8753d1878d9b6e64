import { launchNatsServer, connectBus, requestJson, ensureStreams } from '@svc/bus';
import { subjects } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { startPostgres, startServiceProcess, startTestIssuer, freePort, waitFor } from '@svc/test-support';
const withIngest = process.argv[2] === 'ingest';
const [nats, pgp, issuer] = await Promise.all([launchNatsServer(), startPostgres({ durable: true }), startTestIssuer('svc')]);
const port = await freePort();
const env = { SVC_NATS_URL: nats.url, SVC_DATABASE_URL: pgp.url, SVC_STATE_DIR: '/tmp/x', SVC_LOG_LEVEL: process.argv[3] ?? 'info' };
const nc = await connectBus({ servers: nats.url, name: 'b', logger: createLogger({ name: 'b', level: 'silent' }) });
await ensureStreams(nc);
const ps = [...(withIngest ? [startServiceProcess('event-ingest', env, { discardStdout: true })] : []), startServiceProcess('session', env, { discardStdout: true }), startServiceProcess('gateway', { ...env, SVC_GATEWAY_PORT: String(port), SVC_OIDC_ISSUER: issuer.issuer, SVC_OIDC_AUDIENCE: 'svc' , SVC_RATE_LIMIT_MAX: '100000000'}, { discardStdout: true })];
await waitFor('up', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => ({ status: 0 }))).status === 200, 30000);
await new Promise(r => setTimeout(r, 1000));
const workers = await Promise.all(Array.from({ length: 10 }, () => requestJson(nc, subjects.rpc.createWorker, { owner: 'b' })));
const lat = []; let n = 0; const end = performance.now() + 6000;
await Promise.all(workers.map(async (w) => {
  for (let k = 0; performance.now() < end; k++) {
    const events = Array.from({ length: 100 }, (_, i) => ({ type: 'assistant', uid: `${k}:${i}`, ts: new Date().toISOString(), data: { text: 'hello '.repeat(20), message_id: 'm' } }));
    const t = performance.now();
    const r = await fetch(`http://127.0.0.1:${port}/v1/workers/${w.worker_id}/sdk-events`, { method: 'POST', headers: { authorization: `Bearer ${w.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ events }) });
    await r.text(); n++; lat.push(performance.now() - t);
  }
}));
lat.sort((a, b) => a - b);
console.log(withIngest ? 'with ingest' : 'gateway only', 'ev/s', (n * 100 / 6).toFixed(0), 'p50', lat[lat.length >> 1].toFixed(1), 'p99', lat[Math.floor(lat.length * 0.99)].toFixed(1));
await nc.close(); await Promise.all(ps.map(p => p.stop())); await Promise.all([nats.stop(), pgp.stop(), issuer.stop()]);
