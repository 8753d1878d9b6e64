import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, createLogger } from '@svc/service-kit';
import { collect } from '../../test/collect.js';
import { waitFor } from '@svc/test-support';
import { bubblewrapAvailable, createLocalProvider } from './local.js';

const logger = createLogger({ name: 'test', level: 'silent' });

/** Connects to host:port from inside a sandbox: prints "open" or "refused" (bash's /dev/tcp, 2 s at most). */
const tcpProbe = (host: string, port: number) => ['timeout', '2', 'bash', '-c', `(exec 3<>/dev/tcp/${host}/${port}) 2>/dev/null && echo open || echo refused`];

describe('local sandboxes', () => {
  let dir: string;
  /** A stand-in gateway on the host's loopback: answers every request with its path. */
  let gatewayServer: Server;
  let gateway: { host: string; port: number };
  let options: { dir: string; logger: typeof logger; gateway: { host: string; port: number } };
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-sandboxes-'));
    gatewayServer = createServer((request, response) => response.end(`gateway saw ${request.url}`));
    await new Promise<void>((resolve) => gatewayServer.listen(0, '127.0.0.1', resolve));
    gateway = { host: '127.0.0.1', port: (gatewayServer.address() as AddressInfo).port };
    options = { dir, logger, gateway };
  });
  afterAll(async () => {
    gatewayServer.closeAllConnections();
    await new Promise((resolve) => gatewayServer.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('bubblewrap is installed here (CI installs it), so sandboxes are isolated', () => {
    expect(bubblewrapAvailable()).toBe(true);
    expect(createLocalProvider(options).isolation).toBe('bubblewrap');
  });

  it('a host directory that holds the state directory (its sign-in code and keys) is refused, as is a state directory under /opt', () => {
    const shared = path.join(options.dir, 'checkout');
    expect(() => createLocalProvider({ ...options, hostDirs: [shared], secretDirs: [path.join(shared, '.svc')] })).toThrow(ConfigError);
    expect(() => createLocalProvider({ ...options, hostDirs: [shared], secretDirs: [shared] })).toThrow(/sandboxes would see .* through /);
    expect(() => createLocalProvider({ ...options, secretDirs: ['/opt/svc-state'] })).toThrow(/through \/opt/);
    expect(createLocalProvider({ ...options, hostDirs: [shared], secretDirs: [path.join(options.dir, 'state')] }).isolation).toBe('bubblewrap');
  });

  it('has its own /workspace, /etc/svc, /var/run/svc and /usr/local/bin, and sees the spec paths where they are', async () => {
    const sandbox = await createLocalProvider(options).create({ workerId: 'wrk_paths' });
    await sandbox.upload('/etc/svc/sidecar.json', Buffer.from('{"a":1}'), 0o600);
    await sandbox.upload('/var/run/svc/token', Buffer.from('secret-token\n'), 0o600);
    await sandbox.upload('/usr/local/bin/hello', { fromFile: '/bin/echo' }, 0o755);
    expect(sandbox.resolvePath('/etc/svc/sidecar.json')).toBe('/etc/svc/sidecar.json');
    const read = await sandbox.exec(['cat', '/etc/svc/sidecar.json', '/var/run/svc/token']);
    expect(read).toEqual({ code: 0, stdout: '{"a":1}secret-token\n', stderr: '' });
    expect((await sandbox.exec(['hello', 'from', 'inside'])).stdout).toBe('from inside\n');
    expect((await sandbox.exec(['pwd'])).stdout).toBe('/workspace\n');
    // Its own pid namespace: the host's processes are not there.
    const processes = await sandbox.exec(['ls', '/proc']);
    expect(processes.stdout.split('\n').filter((entry) => /^\d+$/.test(entry)).length).toBeLessThan(5);
    // The host's /etc/svc (or anything else outside its directories) cannot be written.
    expect((await sandbox.exec(['touch', '/usr/evil'])).code).not.toBe(0);
    await sandbox.destroy(1000);
  });

  it('sealed (the default): no network but loopback; the gateway socket is its one way out; unsealed on request', async () => {
    const provider = createLocalProvider(options);
    expect(provider.seals).toBe(true);
    const sealed = await provider.create({ workerId: 'wrk_sealed', sealed: true });
    expect(sealed.controlPlaneSocket).toBe('/var/run/svc/gateway.sock');
    expect((await sealed.exec(tcpProbe('127.0.0.1', gateway.port))).stdout).toBe('refused\n');
    const viaSocket = await sealed.exec([
      'node',
      '-e',
      `require('http').get({ socketPath: '/var/run/svc/gateway.sock', path: '/v1/status' }, (r) => r.pipe(process.stdout))`,
    ]);
    expect(viaSocket.stdout).toBe('gateway saw /v1/status');
    await sealed.destroy(300);
    expect(existsSync(path.join(dir, 'wrk_sealed'))).toBe(false);

    const open = await provider.create({ workerId: 'wrk_unsealed', sealed: false });
    expect((await open.exec(tcpProbe('127.0.0.1', gateway.port))).stdout).toBe('open\n');
    await open.destroy(300);
  });

  it('refuses uploads outside its own directories, and relative or dotted paths', async () => {
    const sandbox = await createLocalProvider(options).create({ workerId: 'wrk_escape' });
    for (const bad of ['/etc/passwd', 'workspace/x', '/workspace/../etc/passwd', '/usr/bin/ls']) {
      await expect(sandbox.upload(bad, Buffer.from('x'))).rejects.toThrow(/sandbox/);
    }
    await sandbox.destroy(1000);
  });

  it('reads a file out of the sandbox as it is; a link the sandbox made is not followed on the host', async () => {
    const sandbox = await createLocalProvider(options).create({ workerId: 'wrk_export' });
    const out = path.join(dir, 'exported');
    expect((await sandbox.exec(['sh', '-c', 'printf bundle > /tmp/a; ln -s /etc/hostname /tmp/link'])).code).toBe(0);
    await sandbox.exportFile('/tmp/a', out, 1024);
    expect(await readFile(out, 'utf8')).toBe('bundle');
    await expect(sandbox.exportFile('/tmp/link', path.join(dir, 'not-exported'), 1024)).rejects.toThrow(/ELOOP|symbolic link/);
    // A FIFO is not waited on; a file past the bound is not read.
    expect((await sandbox.exec(['sh', '-c', 'mkfifo /tmp/fifo; head -c 4096 /dev/zero > /tmp/big'])).code).toBe(0);
    await expect(sandbox.exportFile('/tmp/fifo', path.join(dir, 'not-exported'), 1024)).rejects.toThrow(/not a regular file/);
    await expect(sandbox.exportFile('/tmp/big', path.join(dir, 'not-exported'), 1024)).rejects.toMatchObject({ code: 'payload_too_large' });
    await sandbox.destroy(1000);
  });

  it('starts a program in the background with exactly the environment given; its output is the logs, tail then follow', async () => {
    const sandbox = await createLocalProvider(options).create({ workerId: 'wrk_logs' });
    process.env['SVC_SECRET_OF_THE_HOST'] = 'must-not-leak';
    try {
      await sandbox.startBackground(['sh', '-c', 'echo one; echo two; env; sleep 0.3; echo three'], { PATH: '/usr/bin:/bin', GIVEN: 'yes' });
    } finally {
      delete process.env['SVC_SECRET_OF_THE_HOST'];
    }
    const lines = await collect(sandbox.logs({ tail: 1000, follow: true, signal: new AbortController().signal }));
    expect(lines[0]).toBe('one');
    expect(lines).toContain('GIVEN=yes');
    expect(lines.at(-1)).toBe('three');
    expect(lines.join('\n')).not.toContain('must-not-leak');
    const tail = await collect(sandbox.logs({ tail: 2, follow: false, signal: new AbortController().signal }));
    expect(tail.at(-1)).toBe('three');
    expect(tail).toHaveLength(2);
    await sandbox.destroy(1000);
  });

  it('stop sends SIGTERM to the program (not only to bubblewrap), so it can finish, then SIGKILL after the grace period', async () => {
    const provider = createLocalProvider(options);
    const graceful = await provider.create({ workerId: 'wrk_graceful' });
    await graceful.startBackground(['sh', '-c', 'trap "echo got-term; exit 0" TERM; echo ready; while true; do sleep 0.05; done'], { PATH: '/usr/bin:/bin' });
    const logFile = path.join(dir, 'wrk_graceful', 'sandbox.log');
    await waitFor('ready', async () => (await readFile(logFile, 'utf8')).includes('ready'));
    await graceful.stop(5000);
    expect(await readFile(logFile, 'utf8')).toContain('got-term');

    const stubborn = await provider.create({ workerId: 'wrk_stubborn' });
    await stubborn.startBackground(['sh', '-c', 'trap "" TERM; echo ready; while true; do sleep 0.05; done'], { PATH: '/usr/bin:/bin' });
    await waitFor('ready', async () => (await readFile(path.join(dir, 'wrk_stubborn', 'sandbox.log'), 'utf8')).includes('ready'));
    const started = Date.now();
    await stubborn.stop(300);
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    await stubborn.destroy(300);
    expect(existsSync(path.join(dir, 'wrk_stubborn'))).toBe(false);
    // Destroying what is gone is harmless.
    await stubborn.destroy(300);
    await graceful.destroy(300);
  });

  it('without bubblewrap: a plain process whose sandbox paths live under its directory', async () => {
    const provider = createLocalProvider({ ...options, isolation: 'process' });
    expect(provider.seals).toBe(false);
    const sandbox = await provider.create({ workerId: 'wrk_plain' });
    const tokenPath = sandbox.resolvePath('/var/run/svc/token');
    expect(tokenPath).toBe(path.join(dir, 'wrk_plain', 'root', 'var/run/svc/token'));
    await sandbox.upload('/var/run/svc/token', Buffer.from('t'));
    expect((await sandbox.exec(['cat', tokenPath])).stdout).toBe('t');
    await sandbox.destroy(300);
  });
});
