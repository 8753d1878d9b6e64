import { spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ReactElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChangedFile } from '@svc/protocol';
import { partOfFile, patchParts } from '../workspace-changes.js';
import { FileDiff } from './FileDiff.js';

/** What an agent might write into a file, to be shown as text. */
const MARKUP = '<img src=x onerror=alert(1)>';

/** A repository's changes as the sidecar reads them: `git diff --cached -M <base>` after `git add -A`. */
function patchOfRealChanges(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-console-diff-'));
  const git = (...args: string[]) => {
    const run = spawnSync('git', ['-c', 'user.name=Agent', '-c', 'user.email=agent@example.com', ...args], {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: dir },
    });
    if (run.status !== 0) throw new Error(`git ${args.join(' ')}: ${run.stderr}`);
    return run.stdout;
  };
  try {
    git('init', '-q', '--initial-branch=main');
    mkdirSync(path.join(dir, 'src'));
    writeFileSync(path.join(dir, 'src/app.ts'), "// the app\nconst greeting = 'hello';\nexport default greeting;\n");
    writeFileSync(path.join(dir, 'old notes.txt'), 'one\ntwo\nthree\nfour\nfive\n');
    writeFileSync(path.join(dir, 'gone.txt'), 'bye\n');
    writeFileSync(path.join(dir, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
    git('add', '-A');
    git('commit', '-q', '-m', 'base');
    const base = git('rev-parse', 'HEAD').trim();
    writeFileSync(path.join(dir, 'src/app.ts'), `// the app\nconst greeting = 'hello, world';\n// ${MARKUP}\nexport default greeting;\n`);
    git('mv', 'old notes.txt', 'new notes.txt');
    writeFileSync(path.join(dir, 'new notes.txt'), 'one\ntwo\nthree\nfour\nfive\nsix\n');
    unlinkSync(path.join(dir, 'gone.txt'));
    writeFileSync(path.join(dir, 'logo.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 9, 9, 9]));
    git('add', '-A');
    return git('diff', '--cached', '-M', base);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The files as the report lists them. */
const FILES: Record<string, ChangedFile> = {
  app: { path: 'src/app.ts', status: 'modified', additions: 2, deletions: 1 },
  renamed: { path: 'new notes.txt', old_path: 'old notes.txt', status: 'renamed', additions: 1, deletions: 0 },
  gone: { path: 'gone.txt', status: 'deleted', additions: 0, deletions: 1 },
  logo: { path: 'logo.png', status: 'modified', additions: 0, deletions: 0, binary: true },
};

const markupOf = (element: ReactElement) => renderToStaticMarkup(element);

describe('FileDiff — one changed file of a real git patch, drawn by react-diff-view', () => {
  let parts: string[];
  beforeAll(() => {
    parts = patchParts(patchOfRealChanges());
  });

  const render = (file: ChangedFile, options: { viewType?: 'split' | 'unified'; open?: boolean } = {}) =>
    markupOf(
      <FileDiff
        file={file}
        part={partOfFile(parts, file)}
        missingPartNote="Not in the stored patch."
        viewType={options.viewType ?? 'split'}
        openAtFirst={options.open ?? true}
      />,
    );

  it('a modified file: its path, status and counts, its hunk header, old and new lines side by side, highlighted; what the agent wrote is text', () => {
    const html = render(FILES.app!);
    expect(html).toContain('<code>src/app.ts</code>');
    expect(html).toContain('>modified<');
    expect(html).toContain('+2<span class="visually-hidden"> lines added,</span>');
    expect(html).toContain('@@ -1,3 +1,4 @@');
    // Split: old and new each have their gutter and code column.
    expect(html.match(/<col class="diff-gutter-col"\/>/g)).toHaveLength(2);
    expect(html).toContain('diff-code-delete');
    expect(html).toContain('diff-code-insert');
    expect(html).toContain('class="token keyword"');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).not.toContain('<img');
    expect(html).toContain('aria-expanded="true"');
  });

  it('unified: one code column, old and new line numbers in two gutters', () => {
    const html = render(FILES.app!, { viewType: 'unified' });
    expect(html.match(/<col class="diff-gutter-col"\/>/g)).toHaveLength(2);
    expect(html.match(/<col\/>/g)).toHaveLength(1);
    expect(render(FILES.app!, { viewType: 'split' }).match(/<col\/>/g)).toHaveLength(2);
  });

  it('a renamed file names both paths (spaces and all) and shows the line it gained; a deleted one its removed line', () => {
    const renamed = render(FILES.renamed!);
    expect(renamed).toContain('<code>old notes.txt → new notes.txt</code>');
    expect(renamed).toContain('>renamed<');
    expect(renamed).toMatch(/diff-code-insert[^>]*>six</);
    const gone = render(FILES.gone!);
    expect(gone).toContain('>deleted<');
    expect(gone).toMatch(/diff-code-delete[^>]*>bye</);
  });

  it('a binary file says so, with no table; a file past the cut says why it has no diff', () => {
    const binary = render(FILES.logo!);
    expect(binary).toContain('>binary<');
    expect(binary).toContain('A binary file: there are no lines to show.');
    expect(binary).not.toContain('<table');
    const missing = markupOf(
      <FileDiff
        file={{ path: 'later.txt', status: 'added', additions: 3, deletions: 0 }}
        part={undefined}
        missingPartNote="Not in the stored patch."
        viewType="split"
        openAtFirst
      />,
    );
    expect(missing).toContain('Not in the stored patch.');
  });

  it('closed: the header and a Show button naming the file, no diff drawn', () => {
    const html = render(FILES.app!, { open: false });
    expect(html).toContain('aria-expanded="false"');
    expect(html).toContain('Show<span class="visually-hidden"> the diff of src/app.ts</span>');
    expect(html).not.toContain('<table');
    expect(html).toContain(' hidden=""');
  });
});
