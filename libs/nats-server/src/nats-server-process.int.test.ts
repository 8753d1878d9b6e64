import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { describe, expect, it } from 'vitest';
import { findNatsServerBinary, launchNatsServer, natsServerThreads } from './nats-server-process.js';

/** One user, as JSON (valid NATS config): the launcher takes whatever authorization it is given. */
const authorization = {
  credentials: { user: 'only', password: 'secret' },
  config: JSON.stringify({ authorization: { users: [{ user: 'only', password: 'secret' }] } }),
};

describe('launchNatsServer', () => {
  it("starts nats-server -js on a free port with the authorization given, on at most half the machine's threads, and stops it", async () => {
    const server = await launchNatsServer({ authorization });
    const environ = (await readFile(`/proc/${server.pid}/environ`, 'utf8')).split('\0');
    expect(server.url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
    expect(server.credentials).toBe(authorization.credentials);
    await server.stop();
    expect(environ).toContain(`GOMAXPROCS=${natsServerThreads()}`);
    expect(natsServerThreads({})).toBe(String(Math.max(1, Math.floor(availableParallelism() / 2))));
    expect(natsServerThreads({ GOMAXPROCS: '3' })).toBe('3');
  });

  it('no nats-server anywhere names the go install command', () => {
    expect(() => findNatsServerBinary({ PATH: '/nonexistent', GOPATH: '/nonexistent' })).toThrow(/go install github\.com\/nats-io\/nats-server\/v2@/);
    expect(() => findNatsServerBinary({ SVC_NATS_SERVER: '/nonexistent/nats-server' })).toThrow(/SVC_NATS_SERVER points to \/nonexistent\/nats-server/);
  });
});
