import { describe, expect, it } from 'vitest';
import { anchors, codeSpans, headingAnchor, links, readMarkdown, withoutFences } from './markdown.js';

describe('markdown — what a doc points at', () => {
  it('markdown — fenced blocks are left out, their lines kept empty', () => {
    const text = ['before `a`', '```ts', 'const `b` = 1;', '```', '~~~~', '```', '`c`', '~~~~', 'after `d`'].join('\n');
    const stripped = withoutFences(text);
    expect(stripped.split('\n')).toHaveLength(9);
    expect(codeSpans(stripped).spans).toEqual([
      { text: 'a', line: 1 },
      { text: 'd', line: 9 },
    ]);
  });

  it('markdown — a code span closes on a run of the same length and may cross a line break', () => {
    const { spans } = codeSpans('one ``a ` b`` two `c\n  d` three `unclosed');
    expect(spans).toEqual([
      { text: 'a ` b', line: 1 },
      { text: 'c d', line: 1 },
    ]);
  });

  it('markdown — a link written inside a code span is not a link', () => {
    const { links: found } = readMarkdown('see `[x](nowhere.md)` and [y](./protocol.md#sources)');
    expect(found).toEqual([{ target: './protocol.md#sources', line: 1 }]);
  });

  it('markdown — inline links, images, titles and reference definitions are read with their lines', () => {
    const text = '[a](a.md "title")\n![pic](images/p.png)\n[b [nested]](<b.md>)\n\n[ref]: docs/c.md';
    expect(links(text)).toEqual([
      { target: 'a.md', line: 1 },
      { target: 'images/p.png', line: 2 },
      { target: 'b.md', line: 3 },
      { target: 'docs/c.md', line: 5 },
    ]);
  });

  it('markdown — a heading gets the anchor GitHub gives it', () => {
    expect(headingAnchor('The built-in issuer (local stack)')).toBe('the-built-in-issuer-local-stack');
    expect(headingAnchor('Who decides: user assertions')).toBe('who-decides-user-assertions');
    expect(headingAnchor('Records (`libs/protocol/src/v1/audit.ts`)')).toBe('records-libsprotocolsrcv1auditts');
    expect(headingAnchor('See [the bus](bus.md)')).toBe('see-the-bus');
  });

  it('markdown — a repeated heading is numbered, and a heading inside a fence makes no anchor', () => {
    const text = withoutFences('# Tests\n## Tests\n```toml\n# not a heading\n```\n### Tests ##');
    expect([...anchors(text)]).toEqual(['tests', 'tests-1', 'tests-2']);
  });
});
