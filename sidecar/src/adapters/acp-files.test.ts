import { existsSync, linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createAcpFiles } from './acp-files.js';

describe('the ACP client file system (fs/read_text_file, fs/write_text_file)', () => {
  const base = mkdtempSync(path.join(tmpdir(), 'svc-acp-files-'));
  const root = path.join(base, 'workspace');
  mkdirSync(root);
  writeFileSync(path.join(base, 'secret'), 'outside\n');
  symlinkSync(base, path.join(root, 'up'));
  symlinkSync(path.join(base, 'secret'), path.join(root, 'link'));
  writeFileSync(path.join(root, 'lines.txt'), 'one\ntwo\nthree\nfour\n');
  const asked: string[] = [];
  let answer = true;
  const files = createAcpFiles({
    root: () => root,
    ask: (file) => {
      asked.push(file);
      return Promise.resolve(answer);
    },
  });
  afterAll(() => rmSync(base, { recursive: true, force: true }));

  it('reads inside the workspace, by line and limit; a file not there yet reads as empty', async () => {
    expect(await files.read({ sessionId: 's', path: path.join(root, 'lines.txt'), line: 2, limit: 2 })).toEqual({ content: 'two\nthree' });
    expect(await files.read({ sessionId: 's', path: path.join(root, 'new.txt') })).toEqual({ content: '' });
  });

  it('refuses a relative path, a path outside, one through a link out, and a link as the file', async () => {
    await expect(files.read({ sessionId: 's', path: 'lines.txt' })).rejects.toThrow('is not an absolute path');
    await expect(files.read({ sessionId: 's', path: path.join(base, 'secret') })).rejects.toThrow('is outside the workspace');
    await expect(files.read({ sessionId: 's', path: path.join(root, '..', 'secret') })).rejects.toThrow('is outside the workspace');
    await expect(files.read({ sessionId: 's', path: path.join(root, 'up', 'secret') })).rejects.toThrow('through a link');
    await expect(files.read({ sessionId: 's', path: path.join(root, 'link') })).rejects.toThrow('ELOOP');
    await expect(files.write({ sessionId: 's', path: path.join(root, 'up', 'x'), content: 'x' }, () => true)).rejects.toThrow('through a link');
    // Directories are not made through a link out.
    await expect(files.write({ sessionId: 's', path: path.join(root, 'up', 'made', 'x'), content: 'x' }, () => true)).rejects.toThrow('through a link');
    expect(existsSync(path.join(base, 'made'))).toBe(false);
    // A second name of a file (a hard link) is not served.
    linkSync(path.join(base, 'secret'), path.join(root, 'hard'));
    await expect(files.read({ sessionId: 's', path: path.join(root, 'hard') })).rejects.toThrow('hard links');
    await expect(files.write({ sessionId: 's', path: path.join(root, 'hard'), content: 'x' }, () => true)).rejects.toThrow('hard links');
    expect(readFileSync(path.join(base, 'secret'), 'utf8')).toBe('outside\n');
  });

  it('writes a file an allowed call named without asking; another is asked first, and a refusal writes nothing', async () => {
    const allowed = path.join(root, 'allowed.txt');
    await files.write({ sessionId: 's', path: allowed, content: 'yes\n' }, (file) => file === allowed);
    expect(readFileSync(allowed, 'utf8')).toBe('yes\n');
    expect(asked).toEqual([]);
    const other = path.join(root, 'sub', 'other.txt');
    await files.write({ sessionId: 's', path: other, content: 'asked\n' }, () => false);
    expect(asked).toEqual([other]);
    expect(readFileSync(other, 'utf8')).toBe('asked\n');
    answer = false;
    await expect(files.write({ sessionId: 's', path: path.join(root, 'refused.txt'), content: 'no' }, () => false)).rejects.toThrow('was refused');
    expect(() => readFileSync(path.join(root, 'refused.txt'))).toThrow();
  });
});
