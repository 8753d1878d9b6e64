import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createLogger, redactUrl } from './logger.js';

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  });
  return { lines, destination };
}

describe('service-kit logger', () => {
  it('secrets never reach a log line, at any depth the redaction covers', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ name: 'test', destination });
    const secret = 'svc_wt_SECRET-123';
    logger.info({ token: secret }, 'top level');
    logger.info({ worker: { auth_token: secret } }, 'nested');
    logger.info({ req: { headers: { authorization: `Bearer ${secret}` } } }, 'request');
    logger.child({ component: 'x' }).info({ config: { password: secret } }, 'child');
    logger.child({ token: secret }).info({ a: { b: { c: { token: secret } } } }, 'deep, and in bindings');
    expect(lines).toHaveLength(5);
    for (const line of lines) expect(line).not.toContain(secret);
    expect(lines.join('\n')).toContain('[redacted]');
  });

  it('an object without secrets is logged as it is', () => {
    const { lines, destination } = capture();
    createLogger({ name: 'test', destination }).info({ method: 'GET', nested: { status: 200, list: [1, 2] } }, 'plain');
    expect(JSON.parse(lines[0]!)).toMatchObject({ method: 'GET', nested: { status: 200, list: [1, 2] } });
  });

  it('child loggers carry their fields and the service name', () => {
    const { lines, destination } = capture();
    createLogger({ name: 'gateway', destination }).child({ component: 'auth' }).warn('hello');
    const line = JSON.parse(lines[0]!);
    expect(line).toMatchObject({ name: 'gateway', component: 'auth', msg: 'hello', level: 40 });
  });

  it('a database URL is logged without its password', () => {
    expect(redactUrl('postgres://svc:hunter2@db:5432/svc')).toBe('postgres://svc:redacted@db:5432/svc');
    expect(redactUrl('not a url')).toBe('[unparseable url]');
  });

  it('lines written to a file arrive in order, one turn later, and all of them when the process exits at once', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'svc-logger-'));
    try {
      const file = path.join(dir, 'log.jsonl');
      const logger = createLogger({ name: 'test', file });
      for (let n = 0; n < 1000; n++) logger.info({ n }, 'line');
      await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
      const written = (await readFile(file, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).n);
      expect(written).toEqual([...Array(1000).keys()]);

      // A process that logs and exits in the same turn loses nothing.
      const exiting = path.join(dir, 'exit.jsonl');
      const loggerModule = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'logger.js');
      const script = `const { createLogger } = await import(${JSON.stringify(loggerModule)}); const log = createLogger({ name: 'x', file: ${JSON.stringify(exiting)} }); for (let n = 0; n < 500; n++) log.info({ n }, 'bye'); process.exit(3);`;
      await expect(promisify(execFile)(process.execPath, ['--input-type=module', '-e', script])).rejects.toMatchObject({ code: 3 });
      expect((await readFile(exiting, 'utf8')).trim().split('\n')).toHaveLength(500);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
