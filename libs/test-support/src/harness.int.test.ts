import pg from 'pg';
import { connect } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { startNatsServer } from './nats.js';
import { findPgBouncerBinary } from './pgbouncer.js';
import { findPostgresBinDir, startPostgres } from './postgres.js';
import { existsSync } from 'node:fs';

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
