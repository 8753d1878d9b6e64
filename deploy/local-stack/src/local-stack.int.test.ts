import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectBus, requestJson } from '@svc/bus';
import { SERVICE_NAMES, subjects, type ServiceHealth } from '@svc/protocol';
import { gatewaySettings } from '@svc/gateway';
import { createLogger, readConfig } from '@svc/service-kit';
import { freePort } from '@svc/test-support';
import { startLocalStack } from './index.js';

const logger = createLogger({ name: 'local-stack-test', level: 'silent' });

describe('local stack — one process', () => {
  it('starts nats-server, the embedded store and every service, and stops cleanly; a restart reuses the state', async () => {
    const stateDir = await mkdtemp(path.join(tmpdir(), 'svc-local-'));
    try {
      for (let round = 0; round < 2; round++) {
        const gateway = readConfig(gatewaySettings, { SVC_LOCAL_ISSUER: 'true', SVC_GATEWAY_PORT: String(await freePort()) });
        const stack = await startLocalStack({ stateDir, gateway, logger });
        expect(stack.store).toBe('pglite');
        const { token } = (await (await fetch(`${stack.gatewayUrl}/v1/local/token`, { method: 'POST' })).json()) as { token: string };
        const status = await (await fetch(`${stack.gatewayUrl}/v1/status`, { headers: { authorization: `Bearer ${token}` } })).json();
        expect(status).toMatchObject({ status: 'ok', nats: 'up', store: 'up' });
        const nc = await connectBus({ servers: stack.natsUrl, name: 'probe', logger });
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
