import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { createGracefulShutdown } from './shutdown.js';

const logger = createLogger({ name: 'test', level: 'silent' });

describe('service-kit graceful shutdown', () => {
  it('closes in reverse order, once, then exits 0', async () => {
    const closed: string[] = [];
    const exits: number[] = [];
    const shutdown = createGracefulShutdown({ logger, exit: (code) => exits.push(code) });
    shutdown.add({ name: 'database', close: () => void closed.push('database') });
    shutdown.add({ name: 'nats', close: async () => void closed.push('nats') });
    await Promise.all([shutdown.shutdown('test'), shutdown.shutdown('again')]);
    expect(closed).toEqual(['nats', 'database']);
    expect(exits).toEqual([0]);
  });

  it('a failing closer does not stop the others, and the exit code says so', async () => {
    const closed: string[] = [];
    const exits: number[] = [];
    const shutdown = createGracefulShutdown({ logger, exit: (code) => exits.push(code) });
    shutdown.add({ name: 'database', close: () => void closed.push('database') });
    shutdown.add({ name: 'broken', close: () => Promise.reject(new Error('boom')) });
    await shutdown.shutdown('test');
    expect(closed).toEqual(['database']);
    expect(exits).toEqual([1]);
  });

  it('a closer that hangs past the deadline exits 1 anyway', async () => {
    const exits: number[] = [];
    const shutdown = createGracefulShutdown({ logger, timeoutMs: 50, exit: (code) => exits.push(code) });
    shutdown.add({ name: 'stuck', close: () => new Promise(() => {}) });
    await shutdown.shutdown('test');
    expect(exits).toEqual([1]);
  });

  it('SIGTERM starts the shutdown', async () => {
    const exits: number[] = [];
    const shutdown = createGracefulShutdown({ logger, exit: (code) => exits.push(code) });
    let closed = false;
    shutdown.add({ name: 'x', close: () => void (closed = true) });
    shutdown.installSignalHandlers();
    process.emit('SIGTERM');
    await shutdown.shutdown('await the one already running');
    expect(closed).toBe(true);
    expect(exits).toEqual([0]);
  });
});
