import { describe, expect, it } from 'vitest';
import { FLUSH, pktLine, readPushRequestHead, refusedPushReport, withNoThin } from './pkt-line.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

describe('pkt-lines of a push', () => {
  it('reads the ref updates, the first with its capabilities, and where the pack begins', () => {
    const body = Buffer.concat([
      pktLine(`${A} ${B} refs/heads/svc/x\0report-status side-band-64k agent=git/2\n`),
      pktLine(`${B} ${'0'.repeat(40)} refs/heads/old\n`),
      FLUSH,
      Buffer.from('PACK'),
    ]);
    const head = readPushRequestHead(body)!;
    expect(head.commands).toEqual([
      { old: A, new: B, ref: 'refs/heads/svc/x' },
      { old: B, new: '0'.repeat(40), ref: 'refs/heads/old' },
    ]);
    expect(head.capabilities).toEqual(['report-status', 'side-band-64k', 'agent=git/2']);
    expect(body.subarray(head.packOffset).toString()).toBe('PACK');
    // Not all there yet: undefined, to read on.
    expect(readPushRequestHead(body.subarray(0, 30))).toBeUndefined();
  });

  it('refuses what is no push: a bad length, a line that is no update, a signed push, an empty one', () => {
    expect(() => readPushRequestHead(Buffer.from('zzzz'))).toThrow(/not a pkt-line length/);
    expect(() => readPushRequestHead(Buffer.concat([pktLine('hello\n'), FLUSH]))).toThrow(/not a ref update/);
    expect(() => readPushRequestHead(Buffer.concat([pktLine('push-cert\0report-status\n'), FLUSH]))).toThrow(/signed push/);
    expect(() => readPushRequestHead(FLUSH)).toThrow(/updates no ref/);
  });

  it('adds no-thin to the advertised capabilities, once', () => {
    const advertisement = Buffer.concat([
      pktLine('# service=git-receive-pack\n'),
      FLUSH,
      pktLine(`${A} refs/heads/main\0report-status ofs-delta\n`),
      pktLine(`${B} refs/heads/x\n`),
      FLUSH,
    ]);
    const rewritten = withNoThin(advertisement).toString();
    expect(rewritten).toContain(`${A} refs/heads/main\0report-status ofs-delta no-thin\n`);
    expect(rewritten.match(/no-thin/g)).toHaveLength(1);
    expect(withNoThin(withNoThin(advertisement)).toString()).toBe(rewritten);
  });

  it('reports a refusal as git reads it: ng per ref, in side-band 1 when asked, the reason on band 2', () => {
    const head = { commands: [{ old: A, new: B, ref: 'refs/heads/main' }], capabilities: ['report-status'], packOffset: 0 };
    const plain = refusedPushReport(head, new Map([['refs/heads/main', 'svc: denied\nby x']]), 'push refused');
    expect(plain.toString()).toBe(`000eunpack ok\n0028ng refs/heads/main svc: denied by x\n0000`);
    const banded = refusedPushReport({ ...head, capabilities: ['side-band-64k'] }, new Map(), 'push refused').toString('latin1');
    expect(banded.startsWith('0012\u0002push refused\n')).toBe(true);
    expect(banded).toContain('\u0001000eunpack ok\n');
    expect(banded).toContain('ng refs/heads/main not pushed');
    expect(banded.endsWith('0000')).toBe(true);
  });
});
