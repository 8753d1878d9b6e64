import { parseDiff, type TokenNode } from 'react-diff-view';
import { describe, expect, it } from 'vitest';
import { languageOfPath, tokensOf } from './diff-highlighting.js';

/** The class names of every token under `nodes` (refractor's elements: `properties.className`). */
const classesOf = (nodes: readonly TokenNode[]): string[] =>
  nodes.flatMap((node) => [...((node['properties'] as { className?: string[] } | undefined)?.className ?? []), ...classesOf(node.children ?? [])]);

/** The text under `nodes`, as the line shows it. */
const textOf = (nodes: readonly TokenNode[]): string => nodes.map((node) => (node['value'] as string | undefined) ?? textOf(node.children ?? [])).join('');

const TS_PATCH = [
  'diff --git a/src/app.ts b/src/app.ts',
  'index 1111111..2222222 100644',
  '--- a/src/app.ts',
  '+++ b/src/app.ts',
  '@@ -1,2 +1,2 @@',
  ' // the app',
  "-const greeting = 'hello';",
  "+const greeting = 'hello, world';",
  '',
].join('\n');

describe('diff highlighting — a file is highlighted in its language, with refractor 5 under react-diff-view', () => {
  it('languageOfPath — by the ending, or the whole name; nothing for a kind it does not know', () => {
    expect(languageOfPath('src/app.ts')).toBe('typescript');
    expect(languageOfPath('console/src/App.tsx')).toBe('tsx');
    expect(languageOfPath('templates/demo.toml')).toBe('toml');
    expect(languageOfPath('deploy/Dockerfile')).toBe('docker');
    expect(languageOfPath('Makefile')).toBe('makefile');
    expect(languageOfPath('README.md')).toBe('markdown');
    expect(languageOfPath('data.bin')).toBeUndefined();
    expect(languageOfPath('.gitignore')).toBeUndefined();
    expect(languageOfPath('LICENSE')).toBeUndefined();
  });

  it('tokensOf — keywords, strings and comments are tokens of their own; the changed words within a line are marked', () => {
    const hunks = parseDiff(TS_PATCH, { nearbySequences: 'zip' })[0]!.hunks;
    const tokens = tokensOf(hunks, 'src/app.ts')!;
    expect(tokens.old).toHaveLength(2);
    expect(tokens.new).toHaveLength(2);
    const newClasses = classesOf(tokens.new.flat());
    expect(newClasses).toEqual(expect.arrayContaining(['token', 'keyword', 'string', 'comment']));
    expect(tokens.new.map(textOf)).toEqual(['// the app', "const greeting = 'hello, world';"]);
    // markEdits: the text added within the changed line is an edit of its own.
    expect(tokens.new[1]!.filter((node) => node.type === 'edit').map((node) => textOf([node]))).toEqual([', world']);
  });

  it('tokensOf — a file of no known language is tokenized plain, its text whole', () => {
    const hunks = parseDiff(TS_PATCH.replaceAll('src/app.ts', 'notes.unknown'))[0]!.hunks;
    const tokens = tokensOf(hunks, 'notes.unknown')!;
    expect(classesOf(tokens.new.flat())).not.toContain('keyword');
    expect(tokens.new.map(textOf)).toEqual(['// the app', "const greeting = 'hello, world';"]);
  });
});
