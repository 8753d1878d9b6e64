import { launchNatsServer, connectBus, requestJson, ensureStreams } from '@svc/bus';
import { subjects } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { startPostgres, startServiceProcess, startTestIssuer, freePort, waitFor } from '@svc/test-support';
import WebSocket from 'ws';
const [nats, pgp, issuer] = await Promise.all([launchNatsServer(), startPostgres({ durable: true }), startTestIssuer('svc')]);
const port = await freePort();
const env = { SVC_NATS_URL: nats.url, SVC_DATABASE_URL: pgp.url, SVC_STATE_DIR: '/tmp/x', SVC_LOG_LEVEL: 'info' };
const nc = await connectBus({ servers: nats.url, name: 'b', logger: createLogger({ name: 'b', level: 'silent' }) });
await ensureStreams(nc);
const ps = [startServiceProcess('event-ingest', env, { discardStdout: true }), startServiceProcess('session', env, { discardStdout: true }), startServiceProcess('gateway', { ...env, SVC_GATEWAY_PORT: String(port), SVC_OIDC_ISSUER: issuer.issuer, SVC_OIDC_AUDIENCE: 'svc' , SVC_RATE_LIMIT_MAX: '100000000'}, { discardStdout: true })];
await waitFor('up', async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => ({ status: 0 }))).status === 200, 30000);
await new Promise(r => setTimeout(r, 1500));
const w = await requestJson(nc, subjects.rpc.createWorker, { owner: 'bench' });
const token = await issuer.sign({ sub: 'bench' });
// Also watch the stored subject directly on NATS.
const natsSeen = new Map();
nc.subscribe(subjects.storedEvent(w.worker_id), { callback: (_e, m) => { for (const ev of m.json().events) natsSeen.set(ev.uid, performance.now()); } });
const wsSeen = new Map();
const ws = new WebSocket(`ws://127.0.0.1:${port}/v1/workers/${w.worker_id}/sdk-events/stream?after_id=0`, { headers: { authorization: `Bearer ${token}` } });
ws.on('message', (d) => { const f = JSON.parse(String(d)); if (f.kind === 'event') wsSeen.set(f.event.uid, performance.now()); });
await new Promise(r => ws.once('open', r));
const rows = [];
for (let i = 0; i < 100; i++) {
  const uid = `u${i}`; const t0 = performance.now();
  const r = await fetch(`http://127.0.0.1:${port}/v1/workers/${w.worker_id}/sdk-events`, { method: 'POST', headers: { authorization: `Bearer ${w.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ type: 'system', uid, ts: new Date().toISOString(), data: { level: 'info', message: 'x' } }) });
  await r.text(); const t1 = performance.now();
  await waitFor('ws', () => wsSeen.has(uid), 5000, 1);
  rows.push([t1 - t0, natsSeen.get(uid) - t0, wsSeen.get(uid) - t0]);
  await new Promise(r => setTimeout(r, 20));
}
const med = (k) => rows.map(r => r[k]).sort((a, b) => a - b)[50].toFixed(2);
console.log('median ms: POST 202', med(0), '| stored announced', med(1), '| WS', med(2));
ws.close(); await nc.close(); await Promise.all(ps.map(p => p.stop())); await Promise.all([nats.stop(), pgp.stop(), issuer.stop()]);
