import pg from 'pg';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { startNatsServer } from './nats.js';
import { findPgBouncerBinary } from './pgbouncer.js';
import { findPostgresBinDir, startPostgres } from './postgres.js';
import { existsSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startGitServer } from './git-server.js';

describe('test harness — throwaway servers', () => {
  it('starts a JetStream nats-server on a random port and removes it at stop', async () => {
    const server = await startNatsServer();
    const nc = await connect({ servers: server.url, user: 'operator', pass: server.credentials.operator.password });
    const info = nc.info!;
    expect(info.jetstream).toBe(true);
    expect(server.port).toBeGreaterThan(0);
    await nc.close();
    await server.stop();
    expect(existsSync(server.storeDir)).toBe(false);
  });

  it('two servers run side by side without sharing a port', async () => {
    const [a, b] = await Promise.all([startNatsServer(), startNatsServer()]);
    expect(a.port).not.toBe(b.port);
    await Promise.all([a.stop(), b.stop()]);
  });

  it('starts a Postgres on a random port that accepts queries, and stops it', async () => {
    const server = await startPostgres();
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    const { rows } = await client.query<{ answer: number }>('select 41 + 1 as answer');
    expect(rows[0]!.answer).toBe(42);
    await client.end();
    await server.stop();
    const after = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: 2000 });
    await expect(after.connect()).rejects.toThrow();
  });
});

describe('test harness — missing binaries say how to install them', () => {
  it('no PostgreSQL anywhere names the apt-get command', () => {
    expect(() => findPostgresBinDir({ PATH: '/nonexistent' }, '/nonexistent')).toThrow(/apt-get install postgresql/);
  });

  it('no PgBouncer where it is looked for names the apt-get command', () => {
    expect(() => findPgBouncerBinary({ PATH: '/nonexistent', SVC_PGBOUNCER_BIN: '/nonexistent/pgbouncer' }, ['/nonexistent/sbin/pgbouncer'])).toThrow(
      /apt-get install pgbouncer/,
    );
  });
});

describe('test harness — a git server on loopback (smart HTTP, basic auth), as a forge', () => {
  it('the real git clones with the token, is refused without it, and pushes a branch the bare repository then holds', async () => {
    const server = await startGitServer();
    const work = await mkdtemp(path.join(tmpdir(), 'svc-git-client-'));
    // Not spawnSync: the server answering it runs in this very process.
    const git = (args: string[], cwd = work) =>
      new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn('git', args, { cwd, env: { ...process.env, HOME: work, GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1' } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('close', (status) => resolve({ status, stdout, stderr }));
      });
    try {
      const first = server.createRepository('app', { 'README.md': 'hello\n' });
      const withToken = `${server.url.replace('http://', `http://user:${server.token}@`)}/app.git`;
      const refused = await git(['clone', `${server.url}/app.git`, 'refused']);
      expect(refused.status).not.toBe(0);
      expect(refused.stderr).toMatch(/401|Authentication failed|could not read Username/);
      expect((await git(['clone', withToken, 'app'])).status).toBe(0);
      const clone = path.join(work, 'app');
      expect(await readFile(path.join(clone, 'README.md'), 'utf8')).toBe('hello\n');
      expect((await git(['rev-parse', 'HEAD'], clone)).stdout.trim()).toBe(first);
      await writeFile(path.join(clone, 'CHANGE.md'), 'changed\n');
      await git(['add', '-A'], clone);
      expect((await git(['-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', 'commit', '-m', 'change'], clone)).status).toBe(0);
      const pushed = await git(['push', 'origin', 'HEAD:refs/heads/svc/work'], clone);
      expect(pushed.status, pushed.stderr).toBe(0);
      const head = (await git(['rev-parse', 'HEAD'], clone)).stdout.trim();
      expect((await git(['rev-parse', 'refs/heads/svc/work'], path.join(server.root, 'app.git'))).stdout.trim()).toBe(head);
      expect(server.requests().some((r) => r.line.startsWith('POST /app.git/git-receive-pack') && r.authorized)).toBe(true);
      expect(server.requests().some((r) => !r.authorized)).toBe(true);
    } finally {
      await server.stop();
      await rm(work, { recursive: true, force: true });
    }
  });
});
