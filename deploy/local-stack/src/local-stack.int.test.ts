import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectBus, requestJson } from '@svc/bus';
import { SERVICE_NAMES, subjects, type ServiceHealth } from '@svc/protocol';
import { gatewaySettings } from '@svc/gateway';
import { createLogger, readConfig } from '@svc/service-kit';
import { freePort, localUserToken, waitFor } from '@svc/test-support';
import WebSocket from 'ws';
import type { StreamFrame } from '@svc/protocol';
import { startLocalStack } from './index.js';

const logger = createLogger({ name: 'local-stack-test', level: 'silent' });

describe('local stack — one process', () => {
  it("the demo session's events arrive over the WebSocket, and are still there after a restart", async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-local-demo-'));
    try {
      const gateway = () =>
        readConfig(gatewaySettings, {
          SVC_LOCAL_ISSUER: 'true',
          SVC_GATEWAY_PORT: '0',
          SVC_GATEWAY_WORKER_PORT: '0',
          SVC_GATEWAY_PUBLIC_URL: 'http://127.0.0.1',
        });
      const first = await startLocalStack({ stateDir, gateway: gateway(), logger, demo: true });
      const demoWorker = first.demo!.worker_id;
      const token = await localUserToken(first.gatewayUrl, stateDir);
      const socket = new WebSocket(`${first.gatewayUrl.replace('http', 'ws')}/v1/workers/${demoWorker}/sdk-events/stream?after_id=0`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const ids: string[] = [];
      socket.on('message', (data) => {
        const frame = JSON.parse(String(data)) as StreamFrame;
        if (frame.kind === 'event') ids.push(frame.event.id);
      });
      await waitFor('8 demo events over the WebSocket', () => ids.length >= 8, 20_000);
      expect(ids.slice(0, 8)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8']);
      socket.close();
      await first.stop();

      const second = await startLocalStack({ stateDir, gateway: gateway(), logger, demo: true });
      const again = await localUserToken(second.gatewayUrl, stateDir);
      const listed = (await (
        await fetch(`${second.gatewayUrl}/v1/workers/${demoWorker}/sdk-events?limit=1000`, { headers: { authorization: `Bearer ${again}` } })
      ).json()) as { total: number };
      expect(listed.total).toBeGreaterThanOrEqual(8);
      await second.stop();
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 90_000);

  it('without bubblewrap the stack still starts; its demo (a sealed sandbox) is refused and the reason given', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-local-unsealed-'));
    try {
      const gateway = readConfig(gatewaySettings, {
        SVC_LOCAL_ISSUER: 'true',
        SVC_GATEWAY_PORT: '0',
        SVC_GATEWAY_WORKER_PORT: '0',
        SVC_GATEWAY_PUBLIC_URL: 'http://127.0.0.1',
      });
      const stack = await startLocalStack({ stateDir, gateway, logger, demo: true, session: { sandboxIsolation: 'process' } });
      try {
        expect(stack.demo).toBeUndefined();
        expect(stack.demoRefused).toMatch(/asks for a sealed sandbox .*install bubblewrap/);
        expect((await fetch(`${stack.gatewayUrl}/healthz`)).status).toBe(200);
      } finally {
        await stack.stop();
      }
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('starts nats-server, the embedded store and every service, and stops cleanly; a restart reuses the state', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-local-'));
    try {
      for (let round = 0; round < 2; round++) {
        const gateway = readConfig(gatewaySettings, { SVC_LOCAL_ISSUER: 'true', SVC_GATEWAY_PORT: String(await freePort()), SVC_GATEWAY_WORKER_PORT: '0' });
        const stack = await startLocalStack({ stateDir, gateway, logger });
        expect(stack.store).toBe('pglite');
        const token = await localUserToken(stack.gatewayUrl, stateDir);
        const status = await (await fetch(`${stack.gatewayUrl}/v1/status`, { headers: { authorization: `Bearer ${token}` } })).json();
        expect(status).toMatchObject({ status: 'ok', nats: 'up', store: 'up' });
        const nc = await connectBus({ servers: stack.natsUrl, name: 'probe', logger, credentials: stack.natsCredentials!.operator });
        for (const service of SERVICE_NAMES) {
          const health = await requestJson<ServiceHealth>(nc, subjects.health(service), {}, { timeoutMs: 2000 });
          expect(health).toMatchObject({ service, status: 'up', instance: 'local' });
        }
        await nc.close();
        await stack.stop();
        expect(existsSync(path.join(stateDir, 'pglite'))).toBe(true);
        expect(existsSync(path.join(stateDir, 'nats'))).toBe(true);
      }
    } finally {
      await rm(stateDir, { recursive: true, force: true });
    }
  }, 60_000);
});
